"""A/B of the AWQ GEMM on one GPU: version 3 (cuda/awq_gemm_v3.cu, kept only for this script) against
version 4 (the runtime's: cuda/awq_gemm.cu, swiftspec_core/kernels/awq_gemm.py), and version 4
built with a deeper ring (-DAWQ_STAGES=8: 7 KB of codes in flight a warp, fewer warps an SM) and
with copies that ask L2 for 256 bytes at once (-DAWQ_L2_256B).

    PYTHONPATH=. python3 paper_figures/awq_gemm_ab.py [--models llama-3-70b,llama-3-8b] [--m 1,8,16]

Every AWQ projection of each model at TP 1 and each M: a CUDA graph of max(20, copies) calls over
`copies` copies of random tiled weights (enough that a graph's calls read more than twice the L2
cache: kernel_ops.input_copies), median us a call over the replays (kernel_bench.time_calls). GB/s
and the floor count kernel_shapes.floor_bytes (4-bit codes, zeros and scales, x in, out written)
over the measured copy bandwidth. Each build runs with plan()'s shape for its own shared memory a
warp. Before timing, each shape's outputs are checked against version 3's on the same inputs
(version 4 sums in the same order: expected 0). Prints a markdown table; about a minute on an H200
(the first calls compile the three modules)."""
from __future__ import annotations

import argparse
import time

import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import (ACCUMULATOR_BYTES, META_BYTES, RUNTIME, STAGE_BYTES, Build,
                                             check_operands, launch_shape, plan)
from swiftspec_core.models.awq import GROUP
from swiftspec_core.models.args import awq_bytes
from timing import ab_gemm, device_line

# Version 3: its 4-stage ring without meta slots; v4-s8: the runtime's source with 8 stages; v4-l2:
# its copies with the L2::256B prefetch hint.
BUILDS = {
    "v3": Build("awq_gemm_v3", (), 4 * STAGE_BYTES + ACCUMULATOR_BYTES),
    "v4": RUNTIME,
    "v4-s8": Build("awq_gemm", ("AWQ_STAGES=8",), 8 * (STAGE_BYTES + META_BYTES) + ACCUMULATOR_BYTES),
    "v4-l2": Build("awq_gemm", ("AWQ_L2_256B",), RUNTIME.warp_shared),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-70b,llama-3-8b")
    parser.add_argument("--m", default="1,8,16", help="rows of a call, comma-separated (1..16)")
    args = parser.parse_args()
    started = time.perf_counter()
    bandwidth, sms = device_line()
    names = list(BUILDS)
    print("| model | op | N | K | M | floor us | " + " | ".join(f"{b} (S, C) | {b} us | {b} % of copy bw" for b in names)
          + " | " + " | ".join(f"{b} / v3 | max abs({b} - v3) / max abs(v3)" for b in names[1:]) + " |")
    print("|---" * (6 + 3 * len(names) + 2 * (len(names) - 1)) + "|")
    for model in args.models.split(","):
        for projection in AWQ_PROJECTIONS:
            n, k, has_bias = gemm_shape(shard_args(model, 1), projection)
            copies = input_copies(awq_bytes(n * k, GROUP))
            ws = [random_awq(n, k) for _ in range(copies)]
            bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) * 0.02 if has_bias else None
            plans = {b: plan(n, k, GROUP, sms, build.warp_shared) for b, build in BUILDS.items()}
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
                cells += [f"{us[b] / us['v3']:.2f} | {agreement[b]:.2e}" for b in names[1:]]
                print(f"| {model} | {projection} | {n} | {k} | {m} | {floor_us:.1f} | " + " | ".join(cells) + " |",
                      flush=True)
            del ws
            torch.cuda.empty_cache()
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
