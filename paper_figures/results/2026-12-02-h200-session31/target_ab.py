"""Session 31 (v196): the persistent target build's tunables against its base, in one process
(branch persistent-target): X_LANES (warp 0's lanes issuing a phase's x copies, plain rows one a
row) and L2_AHEAD (weight pages the producer asks into L2 past its ring). One engine (Llama-3-8B
shapes, random bf16, context 1000), at each width GRAPHS graphs a variant captured in rotation, the
base's among them; ROUNDS rounds replay every graph once (order alternating), CUDA events; each
variant against the base as ab_replay's contrast (B - A over the graphs' medians, Welch's 95%),
logits bitwise the base's. Usage: PYTHONPATH=. python3 target_ab.py [--widths 8,12] [--rounds 200]"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from paper_figures.ab_replay import capture, contrast, floor_us
from paper_figures.timing import device_line, median_ms, print_rows
from swiftspec_bench.kernel_bench import build_shard, use_kernels
from swiftspec_core.kernels import persistent_target

VARIANTS = {"base (x lanes 1)": (("X_LANES", 1),), "x lanes 32": (("X_LANES", 32),),
            "x lanes 32, L2 ahead 4": (("X_LANES", 32), ("L2_AHEAD", 4)),
            "x lanes 32, L2 ahead 8": (("X_LANES", 32), ("L2_AHEAD", 8)),
            "x lanes 32, L2 ahead 16": (("X_LANES", 32), ("L2_AHEAD", 16))}
GRAPHS, WARMUP = 2, 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--widths", default="8,12")
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    bandwidth, _ = device_line()
    widths = [int(w) for w in args.widths.split(",")]
    engine = build_shard("llama-3-8b", 1, args.context + max(widths) + 1)
    use_kernels(engine, "persistent")
    names = list(VARIANTS)
    rows = []
    for width in widths:
        captured, side = [], []  # graph i: variant side[i]
        for g in range(GRAPHS):
            for v in (names if g % 2 == 0 else reversed(names)):
                persistent_target.TUNING = VARIANTS[v]
                captured.append(capture(engine, width, args.context))
                side.append(names.index(v))
        persistent_target.TUNING = ()
        graphs = [c[0] for c in captured]
        for _ in range(WARMUP):
            for g in graphs:
                g.replay()
        torch.cuda.synchronize()
        base_logits = captured[side.index(0)][1]
        t = np.zeros((args.rounds, len(graphs)))
        for r in range(args.rounds):
            for i in (range(len(graphs)) if r % 2 == 0 else reversed(range(len(graphs)))):
                t[r, i] = median_ms(graphs[i].replay, 1)[1] * 1e3
        floor = floor_us("llama-3-8b", width, args.context, bandwidth)
        for v in range(1, len(names)):
            cols = [i for i, s in enumerate(side) if s in (0, v)]
            verdict = contrast(t[:, cols], [int(side[i] == v) for i in cols])
            same = all(torch.equal(base_logits, captured[i][1]) for i, s in enumerate(side) if s == v)
            rows.append({"width": width, "B": names[v], **verdict, "same bits": same, "floor us": floor,
                         "A x floor": verdict["A us"] / floor, "B x floor": verdict["B us"] / floor})
        del captured, graphs
        torch.cuda.empty_cache()
    print(f"llama-3-8b, context {args.context}, the persistent target build; A: base (x lanes 1, no L2 ahead: session 31's call 1), {GRAPHS} graphs a variant, "
          f"{args.rounds} rounds\n")
    print_rows(rows)


if __name__ == "__main__":
    main()
