"""Where the AWQ GEMM's fixed cost goes, by stamps, one H200 (NOTES v244):

    PYTHONPATH=. python3 paper_figures/awq_phases.py --out DIR

The 70B's o, qkv and down at M = 8 (bf16 and fp16 x), called back to back in one CUDA graph as
the kernel table times them (plan()'s shape, PDL on, weight copies rotated past L2), built through
forward_timeline.py's instrumentation: each block's thread 0 stamps its entry and exit, and
awq_gemm_block.cuh's five places (its PDL wait and the wait's return, warp 0's first chunk of
codes landed, warp 0's loop done, the block's barrier after every warp's loop). One replay's
launches split into forward_timeline.phases's spans, medians over every block of every launch but
the first, in us after the end of the launch before: reach (the block at its PDL wait; negative:
it waited there), in wait, release (the wait's return), first codes, loop, combine (the barrier:
the block's slowest warp), epilogue (the warps' sums added, rounded and stored, to thread 0's
exit); and the launch period (its last block's end after the one before's). The stamps add a
barrier at each kernel's start and an atomic at its end, so us a call is the stamped build's
(~0.8 us over the plain kernel's on o: NOTES v244). Random codes, zeros, scales and x (labelled)."""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
import torch

from paper_figures.forward_timeline import PHASES, instrument_builds, launches, phases, records
from swiftspec_bench.kernel_bench import median_us
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import awq_gemm_bytes
from swiftspec_core.graphs import capture
from swiftspec_core.kernels.awq_gemm import awq_gemm, plan
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.runtime.floor import copy_bandwidth

SHAPES = {"o": (8192, 8192), "qkv": (10240, 8192), "down": (8192, 28672)}  # Llama-3-70B


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    instrument_builds()  # before any kernel is built
    bandwidth, device = copy_bandwidth(), torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    rows = []
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s; random weights and x (labelled); M = 8; stamped build")
    for op, (n, k) in SHAPES.items():
        copies = input_copies(awq_bytes(n * k, 128))
        calls = max(CALLS, copies)
        ws = [random_awq(n, k) for _ in range(copies)]
        for operands, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
            x = torch.randn(8, k, device="cuda").to(dtype)
            out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)

            def run() -> None:
                for i in range(calls):
                    awq_gemm(x, ws[i % copies], out=out)
            graph, _ = capture(run)
            us = median_us(graph, calls)
            records(device, check=False)  # the warm-up's and the timed replays', dropped
            graph.replay()
            torch.cuda.synchronize()
            ordered = launches(records(device))
            assert len(ordered) == calls, (len(ordered), calls)
            ends = [int(a[:, 2].max()) for a in ordered]
            split = phases(["awq"] * calls, ordered)["awq"]
            row = dict(op=op, n=n, k=k, operands=operands, plan=plan(n, k, 128, sms), weights="random",
                       floor_us=round(awq_gemm_bytes(n, k, 8) / bandwidth * 1e6, 2),
                       us_a_call=round(us, 2), period_us=round(statistics.median(np.diff(ends)) / 1e3, 2),
                       **{name: round(v, 2) for name, v in split.items()})
            rows.append(row)
            print(json.dumps(row), flush=True)
            del graph
        ws.clear()
        torch.cuda.empty_cache()
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    print("| op | x | floor | us a call | period | " + " | ".join(PHASES) + " |")
    print("|---|---|---|---|---|" + "---|" * len(PHASES))
    for r in rows:
        print(f"| {r['op']} | {r['operands']} | {r['floor_us']} | {r['us_a_call']} | {r['period_us']} | "
              + " | ".join(f"{r[p]:.2f}" for p in PHASES) + " |")


if __name__ == "__main__":
    main()
