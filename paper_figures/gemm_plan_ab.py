"""A/B of the bf16 GEMM's launch plan on one GPU: gemm.plan (today's) against a plan that balances
its blocks over the SMs, on every projection where the two differ.

    PYTHONPATH=. python3 paper_figures/gemm_plan_ab.py [--models llama-3.2-1b,llama-3.2-3b,llama-3-8b,llama-3-70b]
                                                      [--tp 1,2] [--m 8]

Why: gemm.plan takes the widest column tile that still gives about a block an SM, whatever the
remainder. The qkv projections of the 1B and 8B get 192 blocks on 132 SMs: 60 SMs read two
blocks' weights and 72 read one, so the call lasts ~2 / 1.45 = 1.38x a balanced one (the 8B qkv
measures 1.35x its floor where gate_up, 6.8 blocks an SM, measures 1.14x). The balanced plan takes,
of the tiles giving at least ~one block an SM, the widest whose busiest SM carries within 5% of
the least imbalanced tile's load, and splits K as gemm.plan does (gemm.k_splits). Both depend on
(N, K, SMs) alone, so rows stay invariant; their sums run in other orders (outputs agree to a few
bf16 ulps).

Timing as awq_gemm_ab.py: one CUDA graph of max(20, copies) calls over copies of the weight that
exceed twice the L2 cache, median us a call (kernel_bench.time_calls). Prints a markdown table.
"""
from __future__ import annotations

import argparse
import functools
import time

import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies
from swiftspec_bench.kernel_shapes import PROJECTIONS, gemm_shape, shard_args
from swiftspec_core.kernels.gemm import k_splits, launch_planned, plan
from timing import ab_gemm, device_line


@functools.cache
def balanced_plan(n: int, k: int, sms: int) -> tuple[int, int]:
    """(NT, S): of the tiles giving >= 0.9 blocks an SM (the narrowest when none does), the widest
    whose busiest SM carries at most 5% more than the least imbalanced tile's; then gemm.plan's K
    split for that many blocks."""
    def imbalance(nt: int) -> float:
        blocks = -(-n // (8 * nt))
        return -(-blocks // sms) / (blocks / sms)

    tiles = [t for t in (4, 2, 1) if -(-n // (8 * t)) * 10 >= sms * 9] or [1]
    least = min(imbalance(t) for t in tiles)
    nt = next(t for t in tiles if imbalance(t) <= 1.05 * least)  # tiles run widest first
    return nt, k_splits(n, k, nt, sms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3.2-1b,llama-3.2-3b,llama-3-8b,llama-3-70b")
    parser.add_argument("--tp", default="1,2")
    parser.add_argument("--m", default="8", help="rows of a call, comma-separated (1..16)")
    args = parser.parse_args()
    started = time.perf_counter()
    bandwidth, sms = device_line()
    print("| model | tp | op | N | K | M | today (NT, S) | balanced (NT, S) | floor us | today us | balanced us "
          "| balanced/today | max abs diff / max abs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for tp in (int(t) for t in args.tp.split(",")):
            for projection in PROJECTIONS:
                n, k, _ = gemm_shape(shard_args(model, tp), projection)
                plans = {"today": plan(n, k, sms), "balanced": balanced_plan(n, k, sms)}
                if plans["today"] == plans["balanced"]:
                    continue
                copies = input_copies(n * k * 2)
                ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
                for m in (int(v) for v in args.m.split(",")):
                    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    sides = {name: lambda out, i, p=p: launch_planned(x, ws[i % copies], None, out, *p)
                             for name, p in plans.items()}  # call i reads weight copy i mod copies
                    agreement, us = ab_gemm(sides, (m, n), max(CALLS, copies))  # balanced against today
                    agreement = agreement["balanced"]
                    floor_us = (n * k + m * k + m * n) * 2 / bandwidth * 1e6
                    print(f"| {model} | {tp} | {projection} | {n} | {k} | {m} | {plans['today']} | {plans['balanced']} "
                          f"| {floor_us:.1f} | {us['today']:.2f} | {us['balanced']:.2f} "
                          f"| {us['balanced'] / us['today']:.2f} | {agreement:.2e} |", flush=True)
                del ws
                torch.cuda.empty_cache()
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
