"""How the LL all-reduce's launch shape sets its latency on two GPUs. A diagnostic, not a result.

    PYTHONPATH=. python3 paper_figures/allreduce_sweep.py [--calls 100] > sweep.md

For each (threads a block, lines a block) of the sweep and each message size, rank 0 prints the
median us per call of `--calls` all-reduces captured in one CUDA graph (kernel_bench's timing,
the graph replayed 10 times), and beside them the same number of 16-byte `add_`s (torch's
elementwise kernel: a graph's per-kernel floor on this machine). The kernel table's rows use the
module's THREADS and CHUNK; this says whether another shape would be faster.
"""
from __future__ import annotations

import argparse

import torch

SHAPES = [(128, 256), (128, 128), (64, 64), (256, 256), (64, 128), (32, 32), (128, 64)]  # (threads, chunk)
SIZES = [4096, 16384, 65536, 262144]  # bytes of bf16


def worker(rank: int, world: int, ctx) -> list[str]:
    from swiftspec_bench.kernel_bench import time_calls
    from swiftspec_core.kernels import allreduce

    calls = ctx.args
    exchange = allreduce.exchange_over(ctx.world.pg, list(range(world)))

    lines = [f"| threads | lines a block | {' | '.join(f'{s // 1024} KB' for s in SIZES)} |",
             "|---|---|" + "---|" * len(SIZES)]
    floor = torch.zeros(4, device="cuda", dtype=torch.float32)
    floor_us = time_calls(lambda i: floor.add_(1.0), calls, before_timing=ctx.world.barrier)
    for threads, chunk in SHAPES:
        allreduce.THREADS, allreduce.CHUNK = threads, chunk  # read at construction and at launch
        ar = allreduce.LLAllReduce(rank, world, exchange, max_bytes=max(SIZES))
        try:
            cells = []
            for size in SIZES:
                x = torch.randn(size // 2, device="cuda").to(torch.bfloat16)
                cells.append(time_calls(lambda i: ar(x), calls, before_timing=ctx.world.barrier))
            lines.append(f"| {threads} | {chunk} | {' | '.join(f'{c:.2f}' for c in cells)} |")
        finally:
            torch.cuda.synchronize()
            ctx.world.barrier()
            ar.close()
    lines.append(f"\nA 16-byte torch add_ in the same kind of graph: {floor_us:.2f} us a call.")
    return lines


def main() -> None:
    from swiftspec_core.runtime.launch import run_workers

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100, help="all-reduces in one captured graph")
    args = parser.parse_args()
    print(f"# LL all-reduce launch shapes, 2 GPUs, {args.calls} calls a graph, median us a call\n")
    print("\n".join(run_workers(worker, 2, args.calls, device="cuda")))


if __name__ == "__main__":
    main()
