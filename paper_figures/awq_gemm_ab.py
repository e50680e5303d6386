"""A/B of the AWQ GEMM on one GPU: version 2 (cuda/awq_gemm_v2.cu, kept only for this script, with its
plan() and launch frozen here) against version 3 (the runtime's: swiftspec_core/kernels/awq_gemm.py).

    PYTHONPATH=. python3 paper_figures/awq_gemm_ab.py [--models llama-3-70b,llama-3-8b] [--m 1,8,16]

Every AWQ projection of each model at TP 1 and each M: a CUDA graph of max(20, copies) calls over
`copies` copies of random tiled weights (enough that a graph's calls read more than twice the L2
cache: kernel_ops.input_copies), median us a call over the replays (kernel_bench.time_calls). GB/s
and the floor count kernel_shapes.floor_bytes (4-bit codes, zeros and scales, x in, out written)
over the measured copy bandwidth. Before timing, each shape's v3 output is checked against v2's on
the same inputs (they sum in other orders: expected within a few bf16 ulps of the largest output).
Prints a markdown table; about a minute on an H200 (the first calls compile both modules)."""
from __future__ import annotations

import argparse
import functools
import time

import numpy as np
import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import awq_gemm, check_operands, plan
from swiftspec_core.kernels.build import launch, ptr
from swiftspec_core.kernels.gemm import _sm_count
from swiftspec_core.models.awq import GROUP, TiledAWQWeight
from swiftspec_core.models.args import awq_bytes
from timing import ab_gemm, device_line

# Version 2's launch rule, as swiftspec_core/kernels/awq_gemm.py had it at b474bb9 (its bits and
# speed are what the A/B compares against; nothing else launches it).
V2_STAGES, V2_STAGE_BYTES = 10, 1120
V2_SPLITS, V2_CLUSTERS = (1, 2, 4, 8, 16), (1, 2, 4, 8)
V2_WARPS_PER_SM, V2_WARPS_IN_FLIGHT, V2_MIN_CHUNKS_PER_WARP = 16, 12, 2
SHARED_PER_SM = 228 * 1024


@functools.cache
def v2_plan(n: int, k: int, sms: int) -> tuple[int, int]:
    """Version 2's (S, C): one wave, blocks balanced over the SMs and ~12 warps an SM."""
    blocks, chunks = -(-n // 64), k // 32
    best, best_key = (1, 1), None
    for cluster in V2_CLUSTERS:
        for splits in V2_SPLITS:
            if cluster * splits > 1 and chunks < cluster * splits * V2_MIN_CHUNKS_PER_WARP:
                continue
            grid = blocks * cluster
            per_sm = -(-grid // sms)
            if per_sm * splits > V2_WARPS_PER_SM or per_sm * (splits * V2_STAGES * V2_STAGE_BYTES + 1024) > SHARED_PER_SM:
                continue
            fill = min(1.0, grid * splits / (V2_WARPS_IN_FLIGHT * sms))
            key = (round(grid / (sms * per_sm) * fill, 3), -cluster, splits)
            if best_key is None or key > best_key:
                best, best_key = (splits, cluster), key
    return best


def v2_awq_gemm(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor) -> torch.Tensor:
    check_operands(x, w, bias, out)  # v3's checks: v2 takes every operand they pass (G = 128 here)
    (m, k), n = x.shape, w.n
    splits, cluster = v2_plan(n, k, _sm_count(x.device.index))
    launch("awq_gemm_v2", f"awq_gemm_c{cluster}", (w.qweight.shape[0] * cluster,), (32 * splits,),
           (ptr(x), ptr(w.qweight), ptr(w.qzeros), ptr(w.scales), np.uint64(0) if bias is None else ptr(bias),
            ptr(out), np.int32(m), np.int32(n), np.int32(k), np.int32((w.group // 32).bit_length() - 1)),
           shared_mem=splits * V2_STAGES * V2_STAGE_BYTES, pdl=cluster == 1)
    return out


VERSIONS = {"v2": v2_awq_gemm, "v3": lambda x, w, bias, out: awq_gemm(x, w, bias, out=out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-70b,llama-3-8b")
    parser.add_argument("--m", default="1,8,16", help="rows of a call, comma-separated (1..16)")
    args = parser.parse_args()
    started = time.perf_counter()
    bandwidth, sms = device_line()
    print("| model | op | N | K | M | v2 (S, C) | v3 (S, C) | floor us | v2 us | v3 us | v3/v2 | v3 x floor "
          "| v3 GB/s | v3 % of copy bw | max abs(v3 - v2) / max abs(v2) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for projection in AWQ_PROJECTIONS:
            n, k, has_bias = gemm_shape(shard_args(model, 1), projection)
            copies = input_copies(awq_bytes(n * k, GROUP))
            ws = [random_awq(n, k) for _ in range(copies)]
            bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) * 0.02 if has_bias else None
            for m in (int(v) for v in args.m.split(",")):
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                sides = {version: lambda out, i, g=gemm: g(x, ws[i % copies], bias, out)  # call i: copy i mod copies
                         for version, gemm in VERSIONS.items()}
                agreement, us = ab_gemm(sides, (m, n), max(CALLS, copies))  # v3 against v2
                floor_b = floor_bytes(Case(f"awq_gemm_{projection}", model, 1, m, None, "ours"))
                floor_us = floor_b / bandwidth * 1e6
                rate = floor_b / (us["v3"] * 1e-6)
                print(f"| {model} | {projection} | {n} | {k} | {m} | {v2_plan(n, k, sms)} | {plan(n, k, GROUP, sms)} "
                      f"| {floor_us:.1f} | {us['v2']:.1f} | {us['v3']:.1f} | {us['v3'] / us['v2']:.2f} "
                      f"| {us['v3'] / floor_us:.2f} | {rate / 1e9:.0f} | {100 * rate / bandwidth:.0f}% "
                      f"| {agreement:.2e} |", flush=True)
            del ws
            torch.cuda.empty_cache()
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
