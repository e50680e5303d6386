"""Where a draft step's host time goes on a GPU machine (profile_host.py measures the decoders'
Python on the CPU; this the part only a GPU has). The Llama-3.2-1B draft step's forward as the
drafter runs it (width 15: eight leaves, a pending slot and a 6-token grafted chain; a 385-wide
staged block; context 300), random weights, under each kernel set, each measured twice in turn (a
process's first measurements ran slower: NOTES, twenty-ninth session). Medians of 200, each part
timed on an idle GPU:
- idle: the GPU's wait before a graph launched onto an idle GPU (kernel_bench.median_us: events
  either side of one replay), less the graph's time in back-to-back replays (the host launches ahead);
- the host time of each part of graphs.PaddedForward.__call__ (the staged event's wait,
  staged.write, the replay: the block's copy is the graph's first node since session 30, the
  event's record) and of the whole call;
- what the drafter does after it (drafter.step): the top-k kernels with the log-prob arithmetic
  (launched while the forward runs), and the read back (tolist of a ready result).

    PYTHONPATH=. python3 paper_figures/step_host.py OUT.md
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

from paper_figures.timing import fail
from swiftspec_bench.kernel_bench import build_shard, forward_graph, median_us, use_kernels
from swiftspec_core import staged
from swiftspec_core.kernels.topk import top_k

WIDTH, CONTEXT, VISIBLE, K, N = 15, 300, 385, 8, 200
PARTS = ("idle", "event wait", "staged.write", "replay", "record", "forward call", "top-k + arithmetic", "read back")


def gpu_graph_us(graph) -> float:
    """The graph's time in back-to-back replays (20 between two events)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(10):
        graph.replay()
        start.record()
        for _ in range(20):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / 20)
    return statistics.median(times)


def measure(forward, call) -> dict[str, float]:
    """Median us of each part (PARTS) of one draft step's host work on `forward`."""
    tokens, positions, rows, prefix, visible = call
    span = forward.span_for(CONTEXT + WIDTH)
    graph, logits = forward.graphs[span]
    gpu_us = gpu_graph_us(graph)
    idle_us = median_us(graph, 1, N) - gpu_us  # median_us: each replay launched onto an idle GPU
    us: dict[str, list[float]] = defaultdict(list)
    for _ in range(N):
        torch.cuda.synchronize()
        t = [time.perf_counter()]
        forward.staged.synchronize()
        t.append(time.perf_counter())
        staged.write(forward.host.numpy(), tokens, positions, rows, prefix, visible, forward.cache.scratch_row)
        t.append(time.perf_counter())
        graph.replay()
        t.append(time.perf_counter())
        forward.staged.record()
        t.append(time.perf_counter())
        values, indices, lse = top_k(logits[:WIDTH].float(), K, fused=True)
        result = torch.stack([values - lse[:, None], indices.float()])
        t.append(time.perf_counter())
        torch.cuda.synchronize()
        t.append(time.perf_counter())
        result.tolist()
        t.append(time.perf_counter())
        for name, a, b in zip(("event wait", "staged.write", "replay", "record", "top-k + arithmetic"),
                              t, t[1:]):
            us[name].append((b - a) * 1e6)
        us["read back"].append((t[-1] - t[-2]) * 1e6)
        torch.cuda.synchronize()
        a = time.perf_counter()
        forward(*call)
        us["forward call"].append((time.perf_counter() - a) * 1e6)
    out = {name: statistics.median(v) for name, v in us.items()}
    out["graph"], out["idle"] = gpu_us, idle_us
    return out


def main() -> None:
    if len(sys.argv) != 2:
        fail("usage: step_host.py OUT.md")
    if not torch.cuda.is_available():
        fail("step_host.py measures a GPU's draft step; this machine has none")
    rows = list(range(CONTEXT, CONTEXT + WIDTH))
    call = ([0] * WIDTH, rows, rows, CONTEXT, [rows[:j + 1] for j in range(WIDTH)])
    lines = ["| kernels | pass | graph us | " + " | ".join(PARTS) + " |", "|---" * (len(PARTS) + 3) + "|"]
    built = {}
    for impl in ("ours", "persistent"):
        engine = build_shard("llama-3.2-1b", 1, 2048)
        use_kernels(engine, impl)
        built[impl] = (engine, forward_graph(engine, WIDTH, CONTEXT, VISIBLE)[1][0])
    for pass_ in (1, 2):
        for impl, (_, forward) in built.items():
            us = measure(forward, call)
            lines.append(f"| {impl} | {pass_} | {us['graph']:.1f} | " + " | ".join(f"{us[p]:.1f}" for p in PARTS) + " |")
            print(lines[-1], flush=True)
    Path(sys.argv[1]).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
