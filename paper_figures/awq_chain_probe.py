"""Does a persistent chain of AWQ GEMMs shed the per-launch fixed costs that hold the 70B's o and qkv
below issue 11's bar (>= 80% of the copy bandwidth at M = 8)? (NOTES v204.) On a GPU:

    PYTHONPATH=. python3 paper_figures/awq_chain_probe.py --out DIR

Llama-3-70B's four layer GEMMs at TP 1 (M = 8, random AWQ weights, group 128), each timed three
ways, 20+ calls on as many weight copies as read twice the L2 cache (kernel_ops' rule, as the
kernels table): `awq_gemm (plan)`, the kernels table's row (separate launches under PDL, plan()'s
shape); `awq_gemm (S, C)`, separate launches at the chain's shape; `awq_chain`, the same calls as
the phases of one launch (swiftspec_core/kernels/awq_chain.py) at each parts C and (warps,
stages) variant. Then a layer mix: LAYERS layers of qkv, o, gate_up, down (each its own weights)
as separate planned launches against one chain. Every chain's outputs are checked bitwise against
awq_gemm at (S, C) (chain_reference) before it is timed. Median us a GEMM from CUDA graph
replays (kernel_bench.time_calls), the floor (the bytes over runtime/floor.py's copy bandwidth)
and the share of it beside each; awq_chain.md and awq_chain.csv in --out.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq, randn
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_chain import AWQChain, Phase, chain_reference
from swiftspec_core.kernels.awq_gemm import awq_gemm, launch_shape
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.runtime.floor import copy_bandwidth

M = 8
SHAPES = {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)}  # 70B TP 1 [N, K]
PARTS = {"qkv": (1, 2, 4), "o": (1, 2), "gate_up": (1,), "down": (1, 2)}  # C: a tile's parts over blocks
VARIANTS = ((16, 8), (16, 4), (20, 4), (24, 4))  # (warps, stages) of the chain's kernel
LAYER_VARIANTS = ((16, 8, 4), (20, 4, 2))  # (warps, stages, qkv parts) of the layer mix's chains


def floor_us(n: int, k: int, bandwidth: float) -> float:
    """The GEMM's bytes (codes, zeros, scales; x and out) over the copy bandwidth, us."""
    return (awq_bytes(n * k, 128) + 2 * M * (n + k)) / bandwidth * 1e6


def checked_chain(phases: list[Phase], warps: int, stages: int, **variant) -> tuple[AWQChain, int]:
    """The chain (AWQChain's variant keywords), run once with its outputs poisoned, and how many of its output elements differ
    from awq_gemm's at (warps, parts) (0: bitwise)."""
    for p in phases:
        p.out.fill_(float("nan"))
    chain = AWQChain(phases, warps, stages, **variant)
    chain()
    expected = chain_reference(phases, warps)
    torch.cuda.synchronize()
    wrong = sum(int((p.out.view(torch.int16) != e.view(torch.int16)).sum()) for p, e in zip(phases, expected))
    return chain, wrong


def shape_rows(name: str, bandwidth: float) -> list[dict]:
    n, k = SHAPES[name]
    copies = input_copies(awq_bytes(n * k, 128))
    calls = max(CALLS, copies)
    ws, x = [random_awq(n, k) for _ in range(copies)], randn(M, k)
    outs = [torch.empty(M, n, dtype=torch.bfloat16, device="cuda") for _ in range(calls)]
    floor = floor_us(n, k, bandwidth)
    rows = []

    def add(impl: str, us: float, shape: str, wrong: int | None = None) -> None:
        rows.append(dict(op=name, impl=impl, shape=shape, us=round(us, 2), floor_us=round(floor, 2),
                         of_bandwidth=round(floor / us, 3), mismatches="" if wrong is None else wrong))
        print(f"{name:8s} {impl:28s} {shape:12s} {us:8.2f} us  floor {floor:6.2f}  {floor / us:5.1%}"
              + ("" if wrong is None else f"  mismatches {wrong}"), flush=True)

    add("awq_gemm (plan)", time_calls(lambda i: awq_gemm(x, ws[i % copies], out=outs[i]), calls), "plan")
    for warps, stages in VARIANTS:
        for parts in PARTS[name]:
            if parts * warps > k // 128:
                continue
            shape = f"S{warps} C{parts} D{stages}"
            if stages == VARIANTS[0][1] and warps == VARIANTS[0][0]:
                add("awq_gemm (S, C)", time_calls(
                    lambda i: launch_shape(x, ws[i % copies], None, outs[i], warps, parts), calls), shape)
            chain, wrong = checked_chain([Phase(x, ws[i % copies], outs[i], parts) for i in range(calls)], warps, stages)
            add("awq_chain", time_calls(lambda i: chain(), 1) / calls, shape, wrong)
    # What the barriers cost (the default build, C = 1): the same chain without them (these phases
    # read nothing another writes), and one stamped launch's phases (barrier_spread).
    phases = [Phase(x, ws[i % copies], outs[i], 1) for i in range(calls)]
    for impl, kwargs in (("no barriers", dict(barriers=False)), ("x via L1", dict(x_l1=True)),
                         ("no barriers, x via L1", dict(barriers=False, x_l1=True))):
        variant, wrong = checked_chain(phases, 16, 8, **kwargs)
        add(f"awq_chain, {impl}", time_calls(lambda i: variant(), 1) / calls, "S16 C1 D8", wrong)
    # The kernels alone, both without PDL: awq_gemm at (16, 1) and the chain a launch a phase.
    pdl, build.PDL = build.PDL, False
    try:
        add("awq_gemm (S, C), no PDL", time_calls(lambda i: launch_shape(x, ws[i % copies], None, outs[i], 16, 1), calls),
            "S16 C1 D4")
    finally:
        build.PDL = pdl
    singles = [AWQChain([p]) for p in phases]
    add("awq_chain, a launch a phase", time_calls(lambda i: singles[i](), calls), "S16 C1 D8")
    stamped = AWQChain(phases, stamps=True)
    stamped()
    torch.cuda.synchronize()
    rows[-1]["spread"] = barrier_spread(stamped.stamps.cpu())
    print(f"{name:8s} stamped: {rows[-1]['spread']}", flush=True)
    return rows


def barrier_spread(stamps: torch.Tensor) -> str:
    """A stamped chain's phases after the first (stamps [phases, blocks, 2]: arrival, departure ns):
    medians over phases of the median and the slowest block's work (arrival less its departure
    from the barrier before), the phase's period (last departure to last departure) and the
    release (median departure less the last arrival), us."""
    arrive, depart = stamps[..., 0].double(), stamps[..., 1].double()
    work = (arrive[1:] - depart[:-1]) / 1e3  # [phases - 1, blocks]
    period = (depart[1:].max(1).values - depart[:-1].max(1).values) / 1e3
    release = (depart[1:].median(1).values - arrive[1:].max(1).values) / 1e3
    return (f"block median {work.median(1).values.median():.2f} / slowest {work.max(1).values.median():.2f} us, "
            f"period {period.median():.2f}, release {release.median():.2f}")


def layer_rows(layers: int, bandwidth: float) -> list[dict]:
    """LAYERS x (qkv, o, gate_up, down), each its own weights: planned launches against one chain
    for each of LAYER_VARIANTS (qkv in its parts, the others in one)."""
    xs = {k: randn(M, k) for k in {k for _, k in SHAPES.values()}}
    phases = []
    for _ in range(layers):
        for name, (n, k) in SHAPES.items():
            phases.append(Phase(xs[k], random_awq(n, k), torch.empty(M, n, dtype=torch.bfloat16, device="cuda")))
    floor = layers * sum(floor_us(n, k, bandwidth) for n, k in SHAPES.values())
    rows = []

    def add(impl: str, shape: str, us: float, wrong: int | None = None) -> None:
        rows.append(dict(op=f"layer x {layers}", impl=impl, shape=shape, us=round(us / layers, 2),
                         floor_us=round(floor / layers, 2), of_bandwidth=round(floor / us, 3),
                         mismatches="" if wrong is None else wrong))
        print(f"layer    {impl:28s} {shape:12s} {us / layers:8.2f} us a layer  floor {floor / layers:7.2f}  "
              f"{floor / us:5.1%}" + ("" if wrong is None else f"  mismatches {wrong}"), flush=True)

    add("awq_gemm (plan)", "plan",
        time_calls(lambda i: awq_gemm(phases[i].x, phases[i].w, out=phases[i].out), len(phases)) * len(phases))
    for warps, stages, qkv_parts in LAYER_VARIANTS:
        parted = [p._replace(parts=qkv_parts) if i % len(SHAPES) == 0 else p for i, p in enumerate(phases)]
        chain, wrong = checked_chain(parted, warps, stages)
        add("awq_chain", f"S{warps} D{stages} qkv C{qkv_parts}", time_calls(lambda i: chain(), 1), wrong)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--ops", default=",".join(SHAPES), help="comma list of " + ", ".join(SHAPES))
    args = parser.parse_args(argv)
    ops = args.ops.split(",")
    if not torch.cuda.is_available():
        print("error: awq_chain_probe needs a CUDA GPU", file=sys.stderr)
        return 2
    if not set(ops) <= set(SHAPES) or args.layers < 0:
        print(f"error: --ops takes {', '.join(SHAPES)}; --layers >= 0", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    bandwidth = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.2f} TB/s; M = {M}", flush=True)
    rows = [row for name in ops for row in shape_rows(name, bandwidth)]
    if args.layers:
        rows += layer_rows(args.layers, bandwidth)
    with open(args.out / "awq_chain.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) + ["spread"])
        writer.writeheader()
        writer.writerows(rows)
    lines = ["# AWQ chain probe (paper_figures/awq_chain_probe.py)\n",
             f"{torch.cuda.get_device_name()}, copy bandwidth {bandwidth / 1e12:.2f} TB/s, M = {M}, "
             "Llama-3-70B TP 1 shapes, random AWQ weights (group 128). us: median a GEMM (a layer), "
             "graph replays; mismatches: chain output elements not bitwise awq_gemm's at (S, C).\n",
             "| op | impl | shape | us | floor us | of bandwidth | mismatches |", "|---|---|---|---|---|---|---|"]
    spreads = [f"- {r['op']}: {r['spread']}" for r in rows if "spread" in r]
    lines += [f"| {r['op']} | {r['impl']} | {r['shape']} | {r['us']} | {r['floor_us']} | {r['of_bandwidth']:.1%} "
              f"| {r['mismatches']} |" for r in rows]
    lines += ["", "One stamped launch of the default chain (S16 C1 D8, with barriers), medians over its phases "
              "after the first:"] + spreads
    (args.out / "awq_chain.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
