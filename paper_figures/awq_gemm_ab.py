"""A/B of the AWQ GEMM on one GPU: version 4 (cuda/awq_gemm_v4.cu, kept only for this script) against
version 5 (the runtime's: cuda/awq_gemm.cu, swiftspec_core/kernels/awq_gemm.py: the weights'
first copies issued before the wait for the kernel before it), and version 5 built with x rows 0..7
loaded 2 or 3 chunks ahead of their mma's (-DAWQ_X_AHEAD=2, 3: 4, 8 registers more) or copied into
the ring beside the codes (-DAWQ_X_RING: no x load held in registers, 512 bytes a stage more of
shared memory, so fewer warps an SM). Every launch is a PDL launch, clusters included, with the
shared memory that caps an SM's blocks at the plan's (build.balanced_shared) unless
SWIFTSPEC_BALANCE=0.

    PYTHONPATH=. python3 paper_figures/awq_gemm_ab.py [--models llama-3-70b,llama-3-8b] [--m 1,8,16]
                                                      [--builds v4,v5,v5-x2,v5-x3,v5-xr]

Every AWQ projection of each model at TP 1 and each M: a CUDA graph of max(20, copies) calls over
`copies` copies of random tiled weights (enough that a graph's calls read more than twice the L2
cache: kernel_ops.input_copies), median us a call over the replays (kernel_bench.time_calls). GB/s
and the floor count kernel_shapes.floor_bytes (4-bit codes, zeros and scales, x in, out written)
over the measured copy bandwidth. Each build runs with plan()'s shape for its own shared memory a
warp. Before timing, each shape's outputs are checked against version 3's on the same inputs
(version 5 sums in the same order: expected 0). Prints a markdown table; about a minute on an H200
(the first calls compile the three modules)."""
from __future__ import annotations

import argparse
import time

import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import (ACCUMULATOR_BYTES, META_BYTES, RUNTIME, STAGE_BYTES, STAGES,
                                             WARP_SHARED_BYTES, Build, check_operands, launch_shape, plan)
from swiftspec_core.models.awq import GROUP
from swiftspec_core.models.args import awq_bytes
from timing import ab_gemm, device_line

X_STAGE_BYTES = 512  # AWQ_X_STAGE_BYTES of the -DAWQ_X_RING build: x rows 0..7 of a chunk
# Version 4 has the runtime's shared memory a warp (the same ring); v5-xr adds x's stages.
BUILDS = {
    "v4": Build("awq_gemm_v4", (), WARP_SHARED_BYTES),
    "v5": RUNTIME,
    "v5-x2": Build("awq_gemm", ("AWQ_X_AHEAD=2",), WARP_SHARED_BYTES),
    "v5-x3": Build("awq_gemm", ("AWQ_X_AHEAD=3",), WARP_SHARED_BYTES),
    "v5-xr": Build("awq_gemm", ("AWQ_X_RING",), STAGES * (STAGE_BYTES + META_BYTES + X_STAGE_BYTES) + ACCUMULATOR_BYTES),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-70b,llama-3-8b")
    parser.add_argument("--m", default="1,8,16", help="rows of a call, comma-separated (1..16)")
    parser.add_argument("--builds", default=",".join(BUILDS), help="comma-separated, the first the baseline")
    args = parser.parse_args()
    names = args.builds.split(",")
    if unknown := set(names) - set(BUILDS):
        parser.error(f"unknown builds {sorted(unknown)}; known: {', '.join(BUILDS)}")
    started = time.perf_counter()
    bandwidth, sms = device_line()
    print("| model | op | N | K | M | floor us | " + " | ".join(f"{b} (S, C) | {b} us | {b} % of copy bw" for b in names)
          + " | " + " | ".join(f"{b} / {names[0]} | max abs({b} - {names[0]}) / max abs({names[0]})" for b in names[1:]) + " |")
    print("|---" * (6 + 3 * len(names) + 2 * (len(names) - 1)) + "|")
    for model in args.models.split(","):
        for projection in AWQ_PROJECTIONS:
            n, k, has_bias = gemm_shape(shard_args(model, 1), projection)
            copies = input_copies(awq_bytes(n * k, GROUP))
            ws = [random_awq(n, k) for _ in range(copies)]
            bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) * 0.02 if has_bias else None
            plans = {b: plan(n, k, GROUP, sms, BUILDS[b].warp_shared) for b in names}
            for m in (int(v) for v in args.m.split(",")):
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                check_operands(x, ws[0], bias, None)

                def run(build: str, out: torch.Tensor, i: int) -> None:  # call i: weight copy i mod copies
                    launch_shape(x, ws[i % copies], bias, out, *plans[build], BUILDS[build])

                sides = {b: lambda out, i, b=b: run(b, out, i) for b in names}
                agreement, us = ab_gemm(sides, (m, n), max(CALLS, copies))
                floor_b = floor_bytes(Case(f"awq_gemm_{projection}", model, 1, m, None, "ours"))
                floor_us = floor_b / bandwidth * 1e6
                cells = [f"{plans[b]} | {us[b]:.1f} | {100 * floor_b / (us[b] * 1e-6) / bandwidth:.0f}%" for b in names]
                cells += [f"{us[b] / us[names[0]]:.2f} | {agreement[b]:.2e}" for b in names[1:]]
                print(f"| {model} | {projection} | {n} | {k} | {m} | {floor_us:.1f} | " + " | ".join(cells) + " |",
                      flush=True)
            del ws
            torch.cuda.empty_cache()
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
