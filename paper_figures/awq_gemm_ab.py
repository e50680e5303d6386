"""A/B of the AWQ GEMM on one GPU: version 4 (cuda/awq_gemm_v4.cu, kept only for this script) against
version 5 (the runtime's: cuda/awq_gemm.cu, swiftspec_core/kernels/awq_gemm.py: the weights' first
copies issued before the wait for the kernel before it).

    PYTHONPATH=. python3 paper_figures/awq_gemm_ab.py [--models llama-3-70b,llama-3-8b] [--m 1,8,16]
                                                      [--builds v4,v5]

Every AWQ projection of each model at TP 1 and each M: a CUDA graph of max(20, copies) calls over
`copies` copies of random tiled weights (enough that a graph's calls read more than twice the L2
cache: kernel_ops.input_copies), median us a call over the replays (kernel_bench.time_calls), each
call launched as the runtime launches it (PDL where the cluster is one block; none anywhere under
SWIFTSPEC_PDL=0). GB/s and the floor count kernel_shapes.floor_bytes (4-bit codes, zeros and
scales, x in, out written) over the measured copy bandwidth. Both versions run plan()'s shape.
Before timing, each shape's outputs are checked against the first build's on the same inputs
(version 5 sums in the same order: expected 0). Prints a markdown table; about 30 s on an H200.
Earlier builds it timed (NOTES v35-v38): 8 stages, the L2::256B hint, x two or three chunks ahead,
x rows in the ring; none kept."""
from __future__ import annotations

import argparse
import time

import torch

from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, Case, floor_bytes, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import check_operands, launch_shape, plan
from swiftspec_core.models.awq import GROUP
from swiftspec_core.models.args import awq_bytes
from timing import ab_gemm, device_line

BUILDS = {"v4": "awq_gemm_v4", "v5": "awq_gemm"}  # the cuda/ source of each


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
            shape = plan(n, k, GROUP, sms)
            for m in (int(v) for v in args.m.split(",")):
                x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                check_operands(x, ws[0], bias, None)

                def run(build: str, out: torch.Tensor, i: int) -> None:  # call i: weight copy i mod copies
                    launch_shape(x, ws[i % copies], bias, out, *shape, BUILDS[build])

                sides = {b: lambda out, i, b=b: run(b, out, i) for b in names}
                agreement, us = ab_gemm(sides, (m, n), max(CALLS, copies))
                floor_b = floor_bytes(Case(f"awq_gemm_{projection}", model, 1, m, None, "ours"))
                floor_us = floor_b / bandwidth * 1e6
                cells = [f"{shape} | {us[b]:.1f} | {100 * floor_b / (us[b] * 1e-6) / bandwidth:.0f}%" for b in names]
                cells += [f"{us[b] / us[names[0]]:.2f} | {agreement[b]:.2e}" for b in names[1:]]
                print(f"| {model} | {projection} | {n} | {k} | {m} | {floor_us:.1f} | " + " | ".join(cells) + " |",
                      flush=True)
            del ws
            torch.cuda.empty_cache()
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
