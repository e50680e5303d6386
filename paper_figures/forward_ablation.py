"""What each op costs inside a fused forward with PDL on: the forward's graph replayed whole, and
with one op's kernels left out of it, at the same shapes.

    PYTHONPATH=. python3 paper_figures/forward_ablation.py --models llama-3-8b,llama-3.2-1b \
        [--width 8] [--context 1000] [--rounds 2] [--quant awq] [--csv FILE]

profile_forward.py times each kernel alone (SWIFTSPEC_PDL=0); under PDL a kernel starts while the
one before it drains and waits for it, so its own time is not what the forward loses to it. Here an
op's cost is the marginal one: replay(whole forward) - replay(forward without that op's launches),
the ops being the attention (the cache append inside it, as the fused forward runs it), the cache
append where it is a kernel of its own, the norm kernels, and each projection (found by its
weight's address, so o_proj and down_proj, which share a kernel, are told apart); an op the
forward has no kernel for is left out of the table. Each
projection's row carries its weights' floor (bytes / copy bandwidth): marginal - floor is what it
costs above streaming its weights, in context. A variant's graph is captured with those launches
skipped, so its outputs are garbage: this measures time and nothing else. The whole forward is
replayed between the variants (`--rounds` times each), so drift shows in the spread of its rows.
"""
from __future__ import annotations

import argparse
import csv
import statistics

import torch

from swiftspec_bench.kernel_bench import build_shard, forward_graph, median_us, use_kernels
from swiftspec_core.kernels import attention, awq_gemm, build, gemm, gemm_epilogue
from swiftspec_core.models.transformer import weight_of
from swiftspec_core.runtime.floor import copy_bandwidth

# The modules that launch through build.launch under their own name for it (from .build import launch).
LAUNCHERS = (build, attention, gemm, gemm_epilogue, awq_gemm)
PROJECTIONS = {"qkv": "wqkv", "o": "wo", "gate_up": "w_gate_up", "down": "w_down"}


def weight_address(w) -> int:
    """The address a projection's launch passes as its weight (args[1]): the bf16 tensor's, or
    the AWQ codes'."""
    w = weight_of(w)
    return (w.qweight if hasattr(w, "qweight") else w).data_ptr()


def ops_of(engine) -> dict[str, tuple]:
    """op -> (skip(name, kernel, args) -> bool, weight bytes or 0)."""
    ops = {"attention": (lambda name, kernel, args: kernel.startswith("tree_attention"), 0),
           "append_kv": (lambda name, kernel, args: kernel == "append_kv", 0),
           "norms": (lambda name, kernel, args: "rmsnorm" in kernel, 0)}
    for op, attr in PROJECTIONS.items():
        ws = [getattr(layer, attr) for layer in engine.layers]
        addresses = {weight_address(w) for w in ws}
        ops[op] = (lambda name, kernel, args, a=addresses: int(args[1]) in a, sum(weight_bytes(w) for w in ws))
    head = engine.embed if engine.lm_head is None else engine.lm_head
    ops["lm_head"] = (lambda name, kernel, args, a=head.data_ptr(): int(args[1]) == a, weight_bytes(head))
    return ops


def weight_bytes(w) -> int:
    """A projection's weight bytes: the bf16 tensor's, or its AWQ tensors' (codes, zeros, scales)."""
    w = weight_of(w)
    return w.nbytes() if hasattr(w, "qweight") else w.nbytes  # AWQ tensors, or the bf16 tensor


class skipping:
    """Inside it, launches for which skip(name, kernel, args) holds do nothing (counted in .skipped)."""

    def __init__(self, skip):
        self.skip, self.skipped = skip, 0

    def __enter__(self):
        self.saved = {m: m.launch for m in LAUNCHERS}
        real = build.launch

        def launch(name, kernel, grid, block, args, *rest, **kw):
            if self.skip(name, kernel, args):
                self.skipped += 1
            else:
                real(name, kernel, grid, block, args, *rest, **kw)

        for m in LAUNCHERS:
            m.launch = launch
        return self

    def __exit__(self, *exc):
        for m, f in self.saved.items():
            m.launch = f


def replay_us(engine, width: int, context: int, skip=None) -> tuple[float, int]:
    """-> (median us of the forward's graph replay, launches skipped while capturing it)."""
    with skipping(skip or (lambda *a: False)) as s:
        graph, keep = forward_graph(engine, width, context)
    us = median_us(graph, 1, replays=50)
    del graph, keep
    return us, s.skipped


def ablate(model: str, width: int, context: int, rounds: int, quant: str) -> list[dict]:
    engine = build_shard(model, 1, context + width + 1, quant=quant)
    use_kernels(engine, "ours")
    bandwidth, rows = copy_bandwidth(), []
    ops = ops_of(engine)
    wholes = [replay_us(engine, width, context)[0]]
    for _ in range(rounds):
        for op, (skip, nbytes) in list(ops.items()):
            without, skipped = replay_us(engine, width, context, skip)
            if not skipped:  # this forward has no such kernel (e.g. no norm kernels on one GPU)
                del ops[op]
                continue
            wholes.append(replay_us(engine, width, context)[0])
            rows.append(dict(model=model, quant=quant, width=width, context=context, op=op, without_us=without,
                             whole_us=statistics.median(wholes[-2:]), floor_us=nbytes / bandwidth * 1e6))
    whole = statistics.median(wholes)
    out = []
    for op in ops:
        mine = [r for r in rows if r["op"] == op]
        marginal = statistics.median(r["whole_us"] - r["without_us"] for r in mine)
        out.append(dict(mine[0], without_us=statistics.median(r["without_us"] for r in mine), whole_us=whole,
                        marginal_us=marginal, spread_us=max(wholes) - min(wholes), wholes=len(wholes)))
    del engine
    torch.cuda.empty_cache()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-8b,llama-3.2-1b")
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quant", choices=("none", "awq"), default="none")
    parser.add_argument("--csv", default=None)
    args = parser.parse_args()
    everything = []
    for model in args.models.split(","):
        rows = ablate(model, args.width, args.context, args.rounds, args.quant)
        everything += rows
        r0 = rows[0]
        print(f"\n{model} (quant {args.quant}), width {args.width}, context {args.context}, PDL on: whole forward "
              f"{r0['whole_us']:.1f} us (median of {r0['wholes']} timings, each the median of 50 replays; their "
              f"spread {r0['spread_us']:.1f} us)\n")
        print("| op | forward without it, us | marginal us | floor us | marginal - floor |")
        print("|---|---|---|---|---|")
        for r in rows:
            extra = f"{r['marginal_us'] - r['floor_us']:.1f}" if r["floor_us"] else ""
            floor = f"{r['floor_us']:.1f}" if r["floor_us"] else ""
            print(f"| {r['op']} | {r['without_us']:.1f} | {r['marginal_us']:.1f} | {floor} | {extra} |")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(everything[0]))
            w.writeheader()
            w.writerows(everything)


if __name__ == "__main__":
    main()
