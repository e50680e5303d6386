"""Every launch shape of a GEMM kernel on a model's layer shapes, timed, beside its plan()'s choice:
does plan() pick the fastest? The AWQ GEMM's shapes are (S warps a block, clusters of C blocks)
from awq_gemm.one_wave_shapes, with plan()'s score; the bf16 GEMM's are (NT 8-column tiles a warp,
S warps a block), every NT built and S up to gemm.MAX_SPLITS.

    PYTHONPATH=. python3 paper_figures/plan_sweep.py [--kernel awq | gemm] [--models llama-3-70b,llama-3-8b]
                                                     [--tp 1] [--ops qkv,o,...] [--m 8] [--top 5] [--csv FILE]

Each projection at each TP (one rank's shard): every shape timed by timing.ab_gemm (one CUDA graph
of max(20, copies) calls over weight copies beyond twice the L2 cache, median us a call; launched
as the runtime launches, so with PDL but the AWQ GEMM's clusters; none under SWIFTSPEC_PDL=0).
Every shape's outputs are checked against plan()'s on the same input first: other shapes sum in
other orders, so they agree to a few bf16 ulps, not bitwise (max relative difference printed).
Prints, per projection, the `--top` fastest shapes and plan()'s, the time against plan()'s; then
one line a projection: plan()'s shape and the fastest. --csv: every shape's row, for fitting a
plan to the measurements (tests/test_kernel_awq_gemm.py reads results/2026-12-01-h200-session9/c4's,
written by this script's AWQ-only predecessor)."""
from __future__ import annotations

import argparse
import time
from typing import Callable, NamedTuple

import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.kernels import awq_gemm, gemm
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.models.awq import GROUP
from timing import ab_gemm, device_line, fail


class Kernel(NamedTuple):
    projections: tuple[str, ...]
    floor_group: str  # kernel_shapes' Case group of its floor
    shapes: Callable  # (n, k, sms) -> {shape: plan()'s score, or None}
    plan: Callable  # (n, k, sms) -> shape
    weights: Callable  # (n, k) -> one weight copy
    weight_bytes: Callable  # (n, k) -> bytes of one copy
    launch: Callable  # (x, w, bias, out, shape)


def _awq_launch(x, w, bias, out, shape):
    awq_gemm.launch_shape(x, w, bias, out, *shape)


def _gemm_launch(x, w, bias, out, shape):
    gemm.launch_planned(x, w, bias, out, *shape)


KERNELS = {
    "awq": Kernel(AWQ_PROJECTIONS, "awq_gemm",
                  lambda n, k, sms: {s: key[0] for s, key in awq_gemm.one_wave_shapes(n, k, GROUP, sms)},
                  lambda n, k, sms: awq_gemm.plan(n, k, GROUP, sms), random_awq,
                  lambda n, k: awq_bytes(n * k, GROUP), _awq_launch),
    "gemm": Kernel(PROJECTIONS, "gemm",
                   lambda n, k, sms: {(nt, s): None for nt in gemm.UNROLL for s in range(1, gemm.MAX_SPLITS + 1)},
                   gemm.plan, lambda n, k: torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02,
                   lambda n, k: 2 * n * k, _gemm_launch),
}


def sweep(kernel: Kernel, model: str, tp: int, projection: str, m: int, sms: int, bandwidth: float,
          top: int) -> tuple[list, str]:
    """Time every shape of one projection; print the `top` fastest and plan()'s.
    -> (a row a shape, the summary line)."""
    n, k, has_bias = gemm_shape(shard_args(model, tp), projection)
    copies = input_copies(kernel.weight_bytes(n, k))
    ws = [kernel.weights(n, k) for _ in range(copies)]
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) * 0.02 if has_bias else None
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    chosen = kernel.plan(n, k, sms)
    scores = dict(sorted(kernel.shapes(n, k, sms).items(), key=lambda item: item[0] != chosen))  # plan()'s first

    def run(shape, out: torch.Tensor, i: int) -> None:  # call i: weight copy i mod copies
        kernel.launch(x, ws[i % copies], bias, out, shape)

    sides = {shape: lambda out, i, shape=shape: run(shape, out, i) for shape in scores}
    agreement, us = ab_gemm(sides, (m, n), max(CALLS, copies))
    floor_b = floor_bytes(Case(f"{kernel.floor_group}_{projection}", model, tp, m, None, "ours"))
    ranked = sorted(us, key=us.get)
    rows = [dict(model=model, tp=tp, op=projection, n=n, k=k, m=m, shape=str(shape), score=scores[shape],
                 us=us[shape], floor_us=floor_b / bandwidth * 1e6, planned=shape == chosen) for shape in ranked]
    for shape in ranked[:top] + ([chosen] if chosen not in ranked[:top] else []):
        score = "-" if scores[shape] is None else scores[shape]
        print(f"| {model} | {tp} | {projection} | {m} | {shape} | {score} | {us[shape]:.1f} | "
              f"{100 * floor_b / (us[shape] * 1e-6) / bandwidth:.0f}% | {us[shape] / us[chosen]:.2f} | "
              f"{agreement.get(shape, 0.0):.1e} |", flush=True)
    return rows, (f"{model} tp{tp} {projection}: plan {chosen} {us[chosen]:.1f} us, fastest {ranked[0]} "
                  f"{us[ranked[0]]:.1f} us, floor {floor_b / bandwidth * 1e6:.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", choices=sorted(KERNELS), default="awq")
    parser.add_argument("--models", default="llama-3-70b,llama-3-8b")
    parser.add_argument("--tp", default="1", help="tensor-parallel sizes, comma-separated")
    parser.add_argument("--ops", default=None, help="projections, comma-separated (default: all the kernel runs)")
    parser.add_argument("--m", type=int, default=8, help="rows of a call (1..16)")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--csv", default=None, help="write every shape's row here")
    args = parser.parse_args()
    kernel = KERNELS[args.kernel]
    ops = args.ops.split(",") if args.ops else list(kernel.projections)
    if unknown := set(ops) - set(kernel.projections):
        fail(f"unknown ops {sorted(unknown)} for --kernel {args.kernel}; known: {', '.join(kernel.projections)}")
    started = time.perf_counter()
    bandwidth, sms = device_line()
    print("| model | tp | op | M | shape | plan()'s score | us | % of copy bw | / plan()'s | max rel. diff |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows, summary = [], []
    for model in args.models.split(","):
        for tp in (int(t) for t in args.tp.split(",")):
            for projection in ops:
                shape_rows, line = sweep(kernel, model, tp, projection, args.m, sms, bandwidth, args.top)
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
