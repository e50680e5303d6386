"""Which side of the 1B's o -> gate_up boundary is slow (NOTES v144, v145):
`PYTHONPATH=. python3 paper_figures/edge_pairs.py` on a GPU.

In the forward, gate_up's blocks are released from their PDL wait ~3 us after o's last block ends
(forward_timeline.py), while edge_probe.py's busy-wait producer releases its consumer in ~0.6 us,
whatever the two kernels' shared-memory configurations (v143). This script times the same boundary
between real kernels at the 1B's shapes (M = 9) and the probe's, swapping one side at a time: the
real o_proj GEMM (gemm with the residual in place) or gate_up (gemm_swiglu with the MLP norm) or
down_proj, against edge_probe's producer (512-thread blocks one an SM, or 1024-thread blocks two
an SM, which fill an SM's threads as o's registers do) and consumer (four 128-thread blocks an SM,
as gate_up). If the probe consumer is also released late after the real o, o's completion is the
slow side; if gate_up is released late after the probe producer, gate_up's own start is.

A graph of REPS pairs; the real kernels stamp through forward_timeline.py's instrumented sources
(block entry, arrival at the wait, the wait's return, exit), the probe's kernels stamp themselves.
Per pair, medians over the pairs (us, after the producer's last block's end): the consumer's first
entry (lead), its blocks' arrival at the wait (reach: the probe consumer waits at entry), the
wait's return (median and last block), and the consumer's last end (adds; the real consumers only).
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch

from swiftspec_core.kernels import build
from swiftspec_core.kernels.gemm import gemm
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu

from paper_figures import edge_probe, forward_timeline as ft
from paper_figures.timing import print_rows

REPS = 16
HIDDEN, FFN, ROWS = 2048, 8192, 9  # Llama-3.2-1B, a draft step's width
REAL = ("o", "gate_up", "down")
WAITING, WAITED = (5 + ft.MARKS.index(m) for m in ("waiting", "waited"))  # a record's fields (forward_timeline)


class Bench:
    """The operands of the three real kernels and the probe's kernels and buffers."""

    def __init__(self, work_ns: int):
        dev, bf = torch.device("cuda"), torch.bfloat16
        gen = torch.Generator(device=dev).manual_seed(0)
        rand = lambda *s: (torch.randn(*s, device=dev, generator=gen) * 0.02).to(bf)  # noqa: E731
        self.attn, self.h, self.y = rand(ROWS, HIDDEN), rand(ROWS, HIDDEN), rand(ROWS, FFN)
        self.wo, self.w_gate_up, self.wd = rand(HIDDEN, HIDDEN), rand(2 * FFN, HIDDEN), rand(HIDDEN, FFN)
        self.mlp_norm = torch.ones(HIDDEN, dtype=bf, device=dev)
        module = build.compile_source(build.inline_includes(edge_probe.SOURCE))
        self.producer, self.consumer = module.get_function("producer"), module.get_function("consumer")
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.sides = {"probe 1x512": edge_probe.Side(sms, 512), "probe 2x1024": edge_probe.Side(2 * sms, 1024),
                      "probe 4x128": edge_probe.Side(4 * sms, 128)}
        for side in self.sides.values():
            side.prepare(self.producer if side.threads > 128 else self.consumer)
        self.work_ns, self.stamps = work_ns, {}
        most = max(side.blocks * side.threads for side in self.sides.values())
        self.words = torch.zeros(most, dtype=torch.int32, device=dev)  # the probe producer's stores (a word a thread)
        self.counters = torch.zeros(3, dtype=torch.int32, device=dev)  # the probe's counters and errors: unused

    def stamps_of(self, name: str) -> torch.Tensor:
        """[3, REPS, blocks] int64 ns (the producer's end, or the consumer's entry and release), zeroed."""
        blocks = self.sides[name].blocks
        if name not in self.stamps:
            self.stamps[name] = torch.zeros(3, REPS, blocks, dtype=torch.int64, device="cuda")
        return self.stamps[name]

    def run(self, name: str, it: int, producer: str | None) -> None:
        """One launch of side `name` (its rep `it`; producer: the side before it, for the consumer)."""
        if name == "o":
            gemm(self.attn, self.wo, residual=self.h, out=self.h)
        elif name == "gate_up":
            gemm_swiglu(self.h, self.w_gate_up, out=self.y, norm=(self.mlp_norm, 1e-5))
        elif name == "down":
            gemm(self.y, self.wd, residual=self.h, out=self.h)
        else:
            p, i32, side, t, c = build.ptr, np.int32, self.sides[name], self.stamps_of(name), self.counters
            if producer is None:  # a producer: late trigger, PDL (no counter)
                side.launch(self.producer, (p(self.words), p(t[0]), p(c), i32(it), i32(self.work_ns), i32(1), i32(0)))
            else:  # a consumer: its check of the producer's words is meaningless here (errors unread)
                side.launch(self.consumer, (p(self.words), p(t[1]), p(t[2]), p(c), p(c), p(c[2:]), i32(it),
                                            i32(1), i32(1), i32(0)))


def measure(bench: Bench, producer: str, consumer: str) -> dict:
    def pairs() -> None:
        for it in range(REPS):
            bench.run(producer, it, None)
            bench.run(consumer, it, producer)

    pairs()  # eager: builds and loads every kernel
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        pairs()
    graph.replay()
    torch.cuda.synchronize()
    device = torch.cuda.current_device()
    ft.records(device, check=False)  # drop the eager run's and the first replay's
    torch.cuda.synchronize()
    graph.replay()
    torch.cuda.synchronize()
    real = ft.launches(ft.records(device))  # the real kernels' launches, by first start
    per_rep = [r for r in (producer, consumer) if r in REAL]
    if len(real) != REPS * len(per_rep):
        raise RuntimeError(f"{len(real)} real launches recorded, {REPS * len(per_rep)} expected")
    rows = []
    for it in range(1, REPS):  # the first pair follows the graph's start, not a consumer
        mine = real[it * len(per_rep):(it + 1) * len(per_rep)]  # by position: a kernel may pair with itself
        if producer in REAL:
            end = int(mine[0][:, 2].max())
        else:
            end = int(bench.stamps_of(producer)[0, it].max())
        if consumer in REAL:
            a = mine[-1].astype(np.int64)
            entry, reach, waited, last = a[:, 1], a[:, WAITING], a[:, WAITED], int(a[:, 2].max())
        else:
            t = bench.stamps_of(consumer).cpu().numpy()
            entry, reach, waited, last = t[1, it], t[1, it], t[2, it], None
        us = lambda x: (np.asarray(x, dtype=np.float64) - end) / 1e3  # noqa: E731
        rows.append(dict(lead=float(us(entry.min())), reach=float(np.median(us(reach))),
                         release=float(np.median(us(waited))), last=float(us(waited).max()),
                         adds=float(us(last)) if last is not None else float("nan")))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {"producer -> consumer": f"{producer} -> {consumer}", **{f"{k} us": v for k, v in med.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-ns", type=int, default=3000, help="the probe producer's busy time a block")
    args = parser.parse_args()
    ft.instrument_builds()  # before any real kernel is built
    bench = Bench(args.work_ns)
    pairs = [("o", "gate_up"), ("probe 1x512", "gate_up"), ("probe 2x1024", "gate_up"), ("o", "probe 4x128"),
             ("probe 1x512", "probe 4x128"), ("gate_up", "gate_up"), ("o", "o"), ("gate_up", "down"),
             ("down", "gate_up"), ("o", "gate_up")]
    rows = []
    for p, c in pairs:
        try:
            rows.append(measure(bench, p, c))
        except Exception as e:  # noqa: BLE001 (a probe: one pair's failure must not hide the others)
            print(f"{p} -> {c}: {type(e).__name__}: {e}")
    print(f"{torch.cuda.get_device_name()}, 1B shapes at M = {ROWS}, {REPS} pairs a graph, probe producer "
          f"{args.work_ns} ns a block\n")
    print_rows(rows)
    print("\nAfter the producer's last block's end (medians over the pairs): lead, the consumer's first entry; "
          "reach, its blocks' arrival at the wait (median block); release, the wait's return (median block) "
          "and last, the last block's; adds, the consumer's last end.")


if __name__ == "__main__":
    main()
