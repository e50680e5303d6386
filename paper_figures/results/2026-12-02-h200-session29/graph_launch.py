"""Session 29, call 6: what a draft step's launch costs on the host and in GPU idle (a record, not a
tool). The 1B draft step's forward (width 15, a 385-wide staged block, context 300, as the drafter
stages it) under each kernel set: the host time of graph.replay() and of the whole
PaddedForward.__call__ (staging, the block's copy, the replay), and the GPU's idle before the graph
starts: an event recorded before an idle-GPU replay to one after it, minus the graph's own time in
back-to-back replays. Medians of 200.

    PYTHONPATH=. python3 paper_figures/results/2026-12-02-h200-session29/graph_launch.py
"""
import statistics
import time

import torch

from swiftspec_bench.kernel_bench import build_shard, forward_graph, use_kernels

WIDTH, CONTEXT, VISIBLE, N = 15, 300, 385, 200


def main() -> None:
    print("| kernels | replay() host us | forward call host us | graph GPU us | idle GPU before the graph us |")
    print("|---|---|---|---|---|")
    for impl in ("ours", "persistent"):
        engine = build_shard("llama-3.2-1b", 1, 2048)
        use_kernels(engine, impl)
        graph, (forward, _) = forward_graph(engine, WIDTH, CONTEXT, VISIBLE)
        rows = list(range(CONTEXT, CONTEXT + WIDTH))
        call = ([0] * WIDTH, rows, rows, CONTEXT, [rows[:j + 1] for j in range(WIDTH)])
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        back_to_back = []
        for _ in range(10):
            graph.replay()
            start.record()
            for _ in range(20):
                graph.replay()
            end.record()
            end.synchronize()
            back_to_back.append(start.elapsed_time(end) * 1e3 / 20)
        gpu_us = statistics.median(back_to_back)
        replay_host, call_host, idle = [], [], []
        for _ in range(N):
            torch.cuda.synchronize()
            t = time.perf_counter()
            graph.replay()
            replay_host.append((time.perf_counter() - t) * 1e6)
            torch.cuda.synchronize()
            t = time.perf_counter()
            forward(*call)
            call_host.append((time.perf_counter() - t) * 1e6)
            torch.cuda.synchronize()
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            idle.append(start.elapsed_time(end) * 1e3 - gpu_us)
        med = statistics.median
        print(f"| {impl} | {med(replay_host):.1f} | {med(call_host):.1f} | {gpu_us:.1f} | {med(idle):.1f} |")
        del graph, forward, engine
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
