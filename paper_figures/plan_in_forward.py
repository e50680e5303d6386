"""An AWQ GEMM's launch shape timed inside the forward, where PDL and the kernels around it count
(plan_sweep.py times shapes alone). One engine; for each (S, C) of one projection (awq_gemm.plan
answering it for that weight's (n, k), every other weight at plan()'s own), the forward's graph is
captured afresh, and the shapes' graphs are replayed in turn, `--rounds` times: median us a forward
a shape, in the order run (alternated, so a drifting clock moves every shape alike).

    PYTHONPATH=. python3 paper_figures/plan_in_forward.py --op gate_up --shapes 3x1,2x1,1x2 \
        [--models llama-3-70b] [--width 8] [--context 1000] [--rounds 3]

A shape `SxCp` (C > 1) launches its clusters with PDL, where the runtime launches them without
(awq_gemm.launch_shape): every cluster launch of that forward's graph, which in the 70B forward at
TP 1 (no projection planned with clusters) is the shape's alone. The first shape is the reference,
normally plan()'s. Other shapes sum K's groups in another order, so their tokens may differ from
plan()'s by a few bf16 ulps: a timing probe, never a runtime setting. Random AWQ weights (kernel_bench.build_shard, quant awq), labelled in the output."""
from __future__ import annotations

import argparse
import statistics

import torch

from swiftspec_bench.kernel_bench import REPLAYS, build_shard, forward_graph, median_us, use_kernels
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, ROW_PARALLEL, gemm_shape, shard_args
from swiftspec_core.kernels import awq_gemm
from swiftspec_core.models.awq import GROUP
from timing import fail

PLAN = awq_gemm.plan  # plan()'s own, before planned_as replaces the module's
LAUNCH = awq_gemm.launch  # build.launch, as awq_gemm.launch_shape calls it
# At TP 1 the row-parallel projections' GEMMs carry the residual and the next RMSNorm
# (awq_norms.awq_gemm_norms plans them with clusters=False: a block stores whole tiles).
WITHOUT_CLUSTERS = ROW_PARALLEL


def weight_nk(model: str, op: str) -> tuple[int, int]:
    """(n, k) of the projection `op`'s weight at TP 1 (gate_up: the 2F rows awq_swiglu takes)."""
    return gemm_shape(shard_args(model, 1), op)[:2]


def planned_as(nk: tuple[int, int], shape: tuple[int, int]) -> None:
    """awq_gemm.plan answers `shape` for a weight of (n, k) = nk, plan()'s own answer for the rest."""
    def plan(n, k, group, sms, clusters=True):
        if (n, k) != nk:
            return PLAN(n, k, group, sms, clusters)
        if shape[1] > 1 and not clusters:  # main() refuses this before any engine is built
            raise ValueError(f"{shape} has C > 1 for a weight the forward runs without clusters")
        return shape

    awq_gemm.plan = plan


def clusters_with_pdl(on: bool) -> None:
    """awq_gemm's cluster launches with PDL (`on`), or as the runtime launches them (without)."""
    def launch(*args, pdl: bool = True, **kwargs):
        LAUNCH(*args, pdl=pdl or on, **kwargs)

    awq_gemm.launch = launch if on else LAUNCH


def parse_shape(text: str) -> tuple[int, int, bool]:
    """`SxC` or `SxCp` (clusters launched with PDL) -> (S, C, pdl); (-1, -1, False) where malformed."""
    pdl = text.endswith("p")
    parts = text[:-1 if pdl else None].split("x")
    if len(parts) != 2 or not all(v.isdigit() for v in parts):
        return (-1, -1, False)
    return (int(parts[0]), int(parts[1]), pdl)


def shape_name(shape: tuple[int, int, bool]) -> str:
    return f"{shape[0]}x{shape[1]}{'p' if shape[2] else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3-70b")
    parser.add_argument("--op", required=True, choices=sorted(AWQ_PROJECTIONS))
    parser.add_argument("--shapes", required=True,
                        help="S x C list, the reference first: 3x1,2x1,1x2 (SxCp: clusters launched with PDL)")
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shapes = [parse_shape(s) for s in args.shapes.split(",")]
    if any(s[1] not in awq_gemm.CLUSTERS or s[0] not in awq_gemm.SPLITS or (s[2] and s[1] == 1) for s in shapes):
        fail(f"--shapes: S x C with S in 1..{max(awq_gemm.SPLITS)}, C in {awq_gemm.CLUSTERS}, a p suffix only where "
             f"C > 1 (got {args.shapes})")
    if len(set(shapes)) < len(shapes):
        fail(f"--shapes: a shape named twice (got {args.shapes})")
    if args.op in WITHOUT_CLUSTERS and any(c > 1 for _, c, _ in shapes):
        fail(f"--shapes: {args.op} runs without clusters in the forward (its GEMM carries the residual and the next "
             "norm): C must be 1")
    for model in args.models.split(","):
        nk = weight_nk(model, args.op)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        engine = build_shard(model, 1, args.context + args.width + 1, quant="awq")
        use_kernels(engine, "ours")
        graphs = []
        for shape in shapes:
            planned_as(nk, shape[:2])
            clusters_with_pdl(shape[2])
            graphs.append(forward_graph(engine, args.width, args.context))
        clusters_with_pdl(False)
        times = {shape: [] for shape in shapes}
        for _ in range(args.rounds):
            for shape, (graph, _) in zip(shapes, graphs):
                times[shape].append(median_us(graph, 1))
        print(f"\n{model} (random AWQ weights), {args.op} [n {nk[0]}, k {nk[1]}], plan() "
              f"{'x'.join(map(str, PLAN(*nk, GROUP, sms)))} on {sms} SMs; width {args.width}, "
              f"context {args.context}, {args.rounds} rounds of CUDA-graph replays (median of {REPLAYS} a round)\n")
        print("| S x C (p: clusters with PDL) | us a forward (median of rounds) | rounds | vs first |\n|---|---|---|---|")
        base = statistics.median(times[shapes[0]])
        for shape in shapes:
            us = statistics.median(times[shape])
            print(f"| {shape_name(shape)} | {us:.1f} | {' '.join(f'{t:.1f}' for t in times[shape])} "
                  f"| {us - base:+.1f} |")
        del graphs, engine
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
