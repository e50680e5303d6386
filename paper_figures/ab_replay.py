"""A kernel change against main in one process, replays interleaved (NOTES v147):
`PYTHONPATH=. python3 paper_figures/ab_replay.py --patch X.patch --models llama-3.2-1b --width 9` on a GPU.

The kernel table's forward rows come from separate processes, and the same code differs by up to
~15 us between processes at the 1B (v143: six runs of one configuration) while the changes tried
lately move it by 5-15 us. Here the forwards live in one process on one engine (the same weights
and inputs, a cache each): four graphs captured in the order A, B, B, A, A with cuda/ as it is and
B with the modules rebuilt from a copy of cuda/ with the patch applied (every module built stays
loaded, so every graph replays). The order cancels what the capture's position costs: in v147 a
second capture of the same code replayed 2.5 us slower than the first. Then ROUNDS rounds each
replay the four once, in alternating order, each timed with CUDA events; the table gives A's and
B's medians, the median of the rounds' differences B - A (each the mean of B's two minus the mean
of A's two) with a bootstrap 95% interval of its mean, and the two in-run nulls, A2 - A1 and
B2 - B1 (each near zero unless position still costs). The logits of all four are compared bitwise
(a change of timing only must keep every bit). `--patch ''` compares main with itself.

Only patches of cuda/ sources: the Python side (launch shapes, #defines the launchers read) is
main's for both graphs.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from swiftspec_bench.kernel_bench import build_shard, use_kernels
from swiftspec_core.graphs import make_forward
from swiftspec_core.kernels import build

ROUNDS, WARMUP = 300, 20


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def patched_cuda(patch: str, into: Path) -> Path:
    """A copy of cuda/ under `into` with `patch` (a -p1 diff of cuda/ files only) applied."""
    shutil.copytree(build.CUDA_DIR, into / "cuda")
    if patch:
        text = Path(patch).read_text()
        targets = [line[6:].split("\t")[0] for line in text.splitlines() if line.startswith("+++ b/")]
        if not targets or any(not t.startswith("cuda/") for t in targets):
            fail(f"{patch} must patch cuda/ files only (it patches {targets})")
        subprocess.run(["patch", "-s", "-p1", "-d", str(into), "-i", str(Path(patch).resolve())], check=True)
    return into / "cuda"


def capture(engine, width: int, context: int):
    """The width-`width` forward after `context` cached tokens (kernel_bench.forward_graph's chain),
    captured now: -> (graph, its logits, what keeps it alive)."""
    cache = engine.new_cache(context + width)
    cache.length = context
    forward = make_forward(engine, cache, width, width)
    rows = list(range(context, context + width))
    forward([0] * width, rows, rows, context, [rows[:j + 1] for j in range(width)])  # stages the inputs
    graph, logits = forward.graphs[forward.span_for(context + width)]
    return graph, logits, (forward, cache)


held_modules: list = []  # every module compile_source has built here: a graph's kernels stay loaded


def rebuild_from(cuda_dir: Path) -> None:
    """Later builds read `cuda_dir` (the modules built so far stay loaded: held_modules)."""
    build.CUDA_DIR = cuda_dir
    build.module.cache_clear()
    build._function.cache_clear()
    build._shared_limit.clear()


def _holding(compile_source):
    def compile_and_hold(code: str):
        m = compile_source(code)
        held_modules.append(m)
        return m
    return compile_and_hold


def timed(graph) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3  # us


def compare(model: str, width: int, context: int, patch: str, rounds: int) -> dict:
    engine = build_shard(model, 1, context + width + 1)
    use_kernels(engine, "ours")
    main_cuda = build.CUDA_DIR
    a1 = capture(engine, width, context)
    with tempfile.TemporaryDirectory() as tmp:
        rebuild_from(patched_cuda(patch, Path(tmp)))
        b1, b2 = capture(engine, width, context), capture(engine, width, context)
    rebuild_from(main_cuda)
    a2 = capture(engine, width, context)
    graphs = [a1[0], b1[0], b2[0], a2[0]]
    for _ in range(WARMUP):
        for g in graphs:
            g.replay()
    torch.cuda.synchronize()
    same_bits = all(torch.equal(a1[1], other[1]) for other in (b1, b2, a2))
    t = np.zeros((rounds, 4))  # us: A1, B1, B2, A2
    for r in range(rounds):
        for i in (range(4) if r % 2 == 0 else reversed(range(4))):
            t[r, i] = timed(graphs[i])
    a, b = (t[:, 0] + t[:, 3]) / 2, (t[:, 1] + t[:, 2]) / 2
    diff = b - a
    boot = np.random.default_rng(0).choice(diff, size=(2000, rounds)).mean(axis=1)
    del a1, b1, b2, a2, graphs, engine
    torch.cuda.empty_cache()
    return {"model": model, "width": width, "context": context, "patch": Path(patch).name if patch else "(none)",
            "A us": float(np.median(a)), "B us": float(np.median(b)), "B - A us (median)": float(np.median(diff)),
            "B - A us (mean)": float(diff.mean()), "95% low": float(np.percentile(boot, 2.5)),
            "95% high": float(np.percentile(boot, 97.5)), "A2 - A1 us": float(np.median(t[:, 3] - t[:, 0])),
            "B2 - B1 us": float(np.median(t[:, 2] - t[:, 1])), "same bits": same_bits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--patch", required=True, help="a -p1 diff of cuda/ files ('': main against itself)")
    parser.add_argument("--models", default="llama-3.2-1b")
    parser.add_argument("--width", type=int, default=9)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    if args.patch and not Path(args.patch).is_file():
        fail(f"no patch at {args.patch}")
    if not torch.cuda.is_available():
        fail("ab_replay.py needs a GPU")
    build.compile_source = _holding(build.compile_source)  # before any module is built
    rows = [compare(m, args.width, args.context, args.patch, args.rounds) for m in args.models.split(",")]
    keys = list(rows[0])
    print(f"{torch.cuda.get_device_name()}, {args.rounds} rounds (graphs captured A1, B1, B2, A2, each replayed "
          f"once a round, order alternating); the bootstrap interval of B - A's mean\n")
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.values()) + " |")


if __name__ == "__main__":
    main()
