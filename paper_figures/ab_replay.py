"""A kernel change against main in one process, replays interleaved (NOTES v147, v148):
`PYTHONPATH=. python3 paper_figures/ab_replay.py --patch X.patch --models llama-3.2-1b --width 9` on a GPU.

The kernel table's forward rows come from separate processes, and the same code differs by up to
~15 us between processes at the 1B (v143: six runs of one configuration) while the changes tried
lately move it by 5-15 us. Here the forwards live in one process on one engine (the same weights
and inputs; a cache and activations each): 2 x GRAPHS graphs, GRAPHS with cuda/ as it is (A) and
GRAPHS with modules built from a copy of cuda/ with the patch applied (B), every module kept
loaded so every graph replays. Captured in Thue-Morse order (A B B A B A A B ...), so a trend
with the capture's position cancels. Then ROUNDS rounds each replay every graph once, in
alternating order, each timed with CUDA events.

What varies between two graphs of the same code is where their cache and activations sit (v148:
+-2..3 us at the 1B, against +-0.3 us of noise from round to round), so the verdict is taken over
graphs: each graph's median, B - A the difference of the two sides' means of them, and its 95%
interval from the spread between graphs (Welch's t), with each side's spread (max - min of its
graphs' medians) beside it, and each side against the forward's floor (every weight and every
layer's cache once at the copy bandwidth measured first: the bars' ratio). The logits of every graph are compared bitwise (a change of timing
only must keep every bit). `--patch ''` compares main with itself.

Only patches of cuda/ sources: the Python side (launch shapes, #defines the launchers read) is
the tree's for both graphs. A trial of the Python side instead reads a variable at launch time
(off: the tree's behaviour), is applied to the tree, and `--env NAME=VALUE` sets it while B's
graphs are captured (and only then).
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import torch

from swiftspec_bench.kernel_bench import build_shard, forward_graph, use_kernels
from swiftspec_bench.kernel_shapes import Case, floor_bytes
from swiftspec_core.kernels import build
from swiftspec_core.runtime.floor import copy_bandwidth

from paper_figures.timing import fail, median_ms, print_rows

ROUNDS, WARMUP, GRAPHS = 300, 20, 4


def patched_cuda(patch: str, into: Path) -> Path:
    """A copy of cuda/ under `into` with `patch` (a -p1 diff of cuda/ files only) applied."""
    shutil.copytree(build.CUDA_DIR, into / "cuda")
    if patch:
        text = Path(patch).read_text()
        targets = [line[6:].split("\t")[0] for line in text.splitlines() if line.startswith("+++ b/")]
        if not targets or any(not t.startswith("cuda/") for t in targets):
            fail(f"{patch} must patch cuda/ files only (it patches {targets})")
        applied = subprocess.run(["patch", "-s", "-p1", "-d", str(into), "-i", str(Path(patch).resolve())],
                                 capture_output=True, text=True)
        if applied.returncode:
            fail(f"{patch} does not apply to cuda/: {(applied.stdout + applied.stderr).strip().splitlines()[0]}")
    return into / "cuda"


def capture(engine, width: int, context: int):
    """kernel_bench.forward_graph's forward, captured now: -> (graph, its logits, what keeps it alive)."""
    graph, keep = forward_graph(engine, width, context)
    forward = keep[0]
    return graph, forward.graphs[forward.span_for(context + width)][1], keep


class Builds:
    """Two sets of built modules, A (cuda/ as it is) and B (a patched copy), and a switch between
    them: build.py's caches and source folder are swapped, never cleared (a graph's kernels stay
    loaded), and B's environment variables set or unset."""

    def __init__(self, patched: Path, env: dict[str, str]):
        self.dirs, self.env = (build.CUDA_DIR, patched), env
        self.caches = [(functools.cache(build.module.__wrapped__), functools.cache(build._function.__wrapped__), {})
                       for _ in self.dirs]

    def use(self, side: int) -> None:
        build.CUDA_DIR = self.dirs[side]
        build.module, build._function, build._shared_limit = self.caches[side]
        for name, value in self.env.items():  # B's variables set, A's unset
            if side:
                os.environ[name] = value
            else:
                os.environ.pop(name, None)


def thue_morse(n: int) -> list[int]:
    """The capture order of n graphs (0: A, 1: B): balanced in every even prefix, and for n = 2^k a
    cost that grows with the position as a polynomial of degree below k (8 graphs: linear or
    quadratic) falls on both sides alike (Prouhet)."""
    return [bin(i).count("1") % 2 for i in range(n)]


# t's 0.975 quantile by degrees of freedom (the next lower tabulated dof is used: conservative).
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}


def contrast(times: np.ndarray, order: list[int]) -> dict:
    """times [rounds, graphs] us, order[i] graph i's side (0 A, 1 B; at least two graphs a side) ->
    each side's mean of its graphs' medians, B - A, its 95% interval over graphs (Welch) and each
    side's spread (max - min of its graphs' medians)."""
    medians, side = np.median(times, axis=0), np.asarray(order)
    a, b = medians[side == 0], medians[side == 1]
    if min(len(a), len(b)) < 2:
        raise ValueError("contrast: at least two graphs a side")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = float(np.sqrt(va + vb))
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else float("inf")
    t = next((q for d, q in sorted(_T975.items(), reverse=True) if d <= dof), _T975[1]) if dof < 1000 else 1.96
    diff = float(b.mean() - a.mean())
    return {"A us": float(a.mean()), "B us": float(b.mean()), "B - A us": diff, "95% low": diff - t * se,
            "95% high": diff + t * se, "A spread us": float(np.ptp(a)), "B spread us": float(np.ptp(b))}


def floor_us(model: str, width: int, context: int, bandwidth: float) -> float:
    """The forward's HBM floor, us: every weight once and every layer's cache (kernel_shapes'
    forward and draft_step rule) at `bandwidth` bytes/s (the measured copy bandwidth)."""
    return floor_bytes(Case("forward", model, 1, width, context, "ours")) / bandwidth * 1e6


def compare(model: str, width: int, context: int, patch: str, env: dict[str, str], rounds: int,
            per_side: int, bandwidth: float, kernels: str = "ours") -> dict:
    engine = build_shard(model, 1, context + width + 1)
    use_kernels(engine, kernels)
    order = thue_morse(2 * per_side)
    with tempfile.TemporaryDirectory() as tmp:
        builds = Builds(patched_cuda(patch, Path(tmp)), env)
        captured = []
        for side in order:
            builds.use(side)
            captured.append(capture(engine, width, context))
        builds.use(0)
    graphs = [g for g, _, _ in captured]
    for _ in range(WARMUP):
        for g in graphs:
            g.replay()
    torch.cuda.synchronize()
    same_bits = all(torch.equal(captured[0][1], logits) for _, logits, _ in captured[1:])
    t = np.zeros((rounds, len(graphs)))  # us, by graph in capture order
    for r in range(rounds):
        for i in (range(len(graphs)) if r % 2 == 0 else reversed(range(len(graphs)))):
            t[r, i] = median_ms(graphs[i].replay, 1)[1] * 1e3  # us, CUDA events
    del captured, graphs, engine
    torch.cuda.empty_cache()
    variant = " ".join([Path(patch).name] * bool(patch) + [f"{k}={v}" for k, v in env.items()]) or "(none)"
    verdict, floor = contrast(t, order), floor_us(model, width, context, bandwidth)
    return {"model": model, "kernels": kernels, "width": width, "context": context, "B": variant,
            "graphs a side": per_side, **verdict, "same bits": same_bits, "floor us": floor,
            "A x floor": verdict["A us"] / floor, "B x floor": verdict["B us"] / floor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--patch", required=True, help="a -p1 diff of cuda/ files ('': main against itself)")
    parser.add_argument("--models", default="llama-3.2-1b")
    parser.add_argument("--width", type=int, default=9)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--graphs", type=int, default=GRAPHS, help="graphs captured a side (at least 2)")
    parser.add_argument("--kernels", default="ours", choices=["ours", "persistent"],
                        help="the forward's kernel set (kernel_bench.use_kernels): persistent times cuda/persistent.cu")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set while B's graphs are captured (a Python-side trial's switch); repeatable")
    args = parser.parse_args()
    env = dict(e.split("=", 1) for e in args.env if "=" in e)
    if len(env) != len(args.env):
        fail(f"--env takes NAME=VALUE (got {args.env})")
    if args.graphs < 2 or args.rounds < 1:
        fail(f"--graphs must be at least 2 and --rounds at least 1 (got {args.graphs}, {args.rounds})")
    if args.patch and not Path(args.patch).is_file():
        fail(f"no patch at {args.patch}")
    if not torch.cuda.is_available():
        fail("ab_replay.py needs a GPU")
    bandwidth = copy_bandwidth()
    rows = [compare(m, args.width, args.context, args.patch, env, args.rounds, args.graphs, bandwidth, args.kernels)
            for m in args.models.split(",")]
    print(f"{torch.cuda.get_device_name()} (copy bandwidth {bandwidth / 1e12:.3f} TB/s: the floor's), "
          f"{args.graphs} graphs a side captured in Thue-Morse order, {args.rounds} "
          f"rounds (each graph replayed once a round, order alternating); B - A over the graphs' medians, its 95% "
          f"interval from the spread between graphs (Welch)\n")
    print_rows(rows)


if __name__ == "__main__":
    main()
