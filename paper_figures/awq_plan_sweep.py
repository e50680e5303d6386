"""Every one-wave launch shape (S warps a block, clusters of C blocks) of the AWQ GEMM on a model's
layer shapes, timed, beside plan()'s choice: does plan()'s score pick the fastest, and what do the
clusters cost?

    PYTHONPATH=. python3 paper_figures/awq_plan_sweep.py [--models llama-3-70b,llama-3-8b] [--tp 1]
                                                         [--ops qkv,o,gate_up,down] [--m 8] [--top 5]
                                                         [--csv FILE]

Each projection at each TP (one rank's shard): every shape of awq_gemm.one_wave_shapes, timed as
awq_gemm_ab.py times a build (one CUDA graph of max(20, copies) calls over weight copies beyond
twice the L2 cache, median us a call; PDL as the runtime launches, none under SWIFTSPEC_PDL=0).
Every shape's outputs are checked against plan()'s on the same input first: other shapes sum in
other orders, so they agree to a few bf16 ulps, not bitwise (max relative difference printed).
Prints, per projection, the `--top` fastest shapes and plan()'s, with plan()'s score and the time
against plan()'s; then one line a projection: the fastest shape of each cluster size. --csv: every
shape's row, for fitting plan()'s score to the measurements."""
from __future__ import annotations

import argparse
import time

import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import CLUSTERS, check_operands, launch_shape, one_wave_shapes, plan
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.models.awq import GROUP
from timing import ab_gemm, device_line


def sweep(model: str, tp: int, projection: str, m: int, sms: int, bandwidth: float, top: int) -> tuple[list, str]:
    """Time every one-wave shape of one projection; print the `top` fastest and plan()'s.
    -> (a row a shape, the summary line)."""
    n, k, has_bias = gemm_shape(shard_args(model, tp), projection)
    copies = input_copies(awq_bytes(n * k, GROUP))
    ws = [random_awq(n, k) for _ in range(copies)]
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) * 0.02 if has_bias else None
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    check_operands(x, ws[0], bias, None)
    chosen = plan(n, k, GROUP, sms)
    scores = dict(sorted(one_wave_shapes(n, k, GROUP, sms), key=lambda s: s[0] != chosen))  # plan()'s first

    def run(shape: tuple[int, int], out: torch.Tensor, i: int) -> None:  # call i: weight copy i mod copies
        launch_shape(x, ws[i % copies], bias, out, *shape)

    sides = {shape: lambda out, i, shape=shape: run(shape, out, i) for shape in scores}
    agreement, us = ab_gemm(sides, (m, n), max(CALLS, copies))
    floor_b = floor_bytes(Case(f"awq_gemm_{projection}", model, tp, m, None, "ours"))
    ranked = sorted(us, key=us.get)
    rows = [dict(model=model, tp=tp, op=projection, n=n, k=k, m=m, splits=shape[0], cluster=shape[1],
                 score=scores[shape][0], us=us[shape], floor_us=floor_b / bandwidth * 1e6, planned=shape == chosen)
            for shape in ranked]
    for shape in ranked[:top] + ([chosen] if chosen not in ranked[:top] else []):
        print(f"| {model} | {tp} | {projection} | {m} | {shape} | {scores[shape][0]} | {us[shape]:.1f} | "
              f"{100 * floor_b / (us[shape] * 1e-6) / bandwidth:.0f}% | {us[shape] / us[chosen]:.2f} | "
              f"{agreement.get(shape, 0.0):.1e} |", flush=True)
    best = {c: min((s for s in us if s[1] == c), key=us.get, default=None) for c in CLUSTERS}
    return rows, (f"{model} tp{tp} {projection}: plan {chosen} {us[chosen]:.1f} us; fastest of each C: "
                  + ", ".join(f"C={c} {s} {us[s]:.1f}" for c, s in best.items() if s is not None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-70b,llama-3-8b")
    parser.add_argument("--tp", default="1", help="tensor-parallel sizes, comma-separated")
    parser.add_argument("--ops", default=",".join(AWQ_PROJECTIONS))
    parser.add_argument("--m", type=int, default=8, help="rows of a call (1..16)")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--csv", default=None, help="write every shape's row here")
    args = parser.parse_args()
    if unknown := set(args.ops.split(",")) - set(AWQ_PROJECTIONS):
        parser.error(f"unknown ops {sorted(unknown)}; known: {', '.join(AWQ_PROJECTIONS)}")
    started = time.perf_counter()
    bandwidth, sms = device_line()
    print("| model | tp | op | M | (S, C) | plan()'s score | us | % of copy bw | / plan()'s | max rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows, summary = [], []
    for model in args.models.split(","):
        for tp in (int(t) for t in args.tp.split(",")):
            for projection in args.ops.split(","):
                shape_rows, line = sweep(model, tp, projection, args.m, sms, bandwidth, args.top)
                rows += shape_rows
                summary.append(line)
                torch.cuda.empty_cache()
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)
    print("\n" + "\n".join(summary))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
