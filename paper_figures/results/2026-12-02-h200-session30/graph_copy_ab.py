"""Session 30, call 6: branch graph-copy (session29/graph-copy.patch: the staged block's copy
captured as each graph's first node) against main's PaddedForward in one process, on one engine
(Llama-3.2-1B shapes, random bf16 weights, our kernels): the draft step as the drafter runs it
(width 15, a 385-wide block, context 300: the forward call, our top-k, the read back), the two
forwards alternating step by step, N steps each after a warm-up; medians of the forward call's
host time and of the whole step's wall time. The branch's graphs.py is loaded from GC_GRAPHS (a
patched copy of the tree) beside main's.

    GC_GRAPHS=/tmp/gc/swiftspec_core/graphs.py PYTHONPATH=. python3 graph_copy_ab.py OUT.md
"""
import importlib.util
import os
import statistics
import sys
import time

import torch

from swiftspec_bench.kernel_bench import build_shard, use_kernels
from swiftspec_core import graphs
from swiftspec_core.kernels.topk import top_k

WIDTH, CONTEXT, VISIBLE, K, N = 15, 300, 385, 8, 600


def branch_graphs():
    spec = importlib.util.spec_from_file_location("swiftspec_core.graphs_copy", os.environ["GC_GRAPHS"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    engine = build_shard("llama-3.2-1b", 1, 2048)
    use_kernels(engine, "ours")
    cache = engine.new_cache(CONTEXT + WIDTH + 1)
    cache.length = CONTEXT
    forwards = {"main": graphs.PaddedForward(engine, cache, WIDTH, VISIBLE, graph=True),
                "graph-copy": branch_graphs().PaddedForward(engine, cache, WIDTH, VISIBLE, graph=True)}
    rows = list(range(CONTEXT, CONTEXT + WIDTH))
    call = ([0] * WIDTH, rows, rows, CONTEXT, [rows[:j + 1] for j in range(WIDTH)])
    ref = {}
    for name, forward in forwards.items():  # the same logits from both
        ref[name] = forward(*call).clone()
    same = torch.equal(ref["main"], ref["graph-copy"])
    call_us, step_us = {n: [] for n in forwards}, {n: [] for n in forwards}
    for i in range(N + 50):
        for name in (("main", "graph-copy") if i % 2 else ("graph-copy", "main")):
            forward = forwards[name]
            a = time.perf_counter()
            logits = forward(*call)
            b = time.perf_counter()
            values, indices, lse = top_k(logits[:WIDTH].float(), K, fused=True)
            torch.stack([values - lse[:, None], indices.float()]).tolist()
            c = time.perf_counter()
            if i >= 50:
                call_us[name].append((b - a) * 1e6)
                step_us[name].append((c - a) * 1e6)
    lines = [f"Llama-3.2-1B draft step (width {WIDTH}, block {VISIBLE} wide, context {CONTEXT}), our kernels, "
             f"{torch.cuda.get_device_name()}; {N} steps each, alternating; logits bitwise alike: {same}", "",
             "| forward | forward call host us (median) | step wall us (median) | step wall us (p10 / p90) |",
             "|---|---|---|---|"]
    for name in forwards:
        s = sorted(step_us[name])
        lines.append(f"| {name} | {statistics.median(call_us[name]):.1f} | {statistics.median(s):.1f} | "
                     f"{s[len(s) // 10]:.1f} / {s[9 * len(s) // 10]:.1f} |")
    open(sys.argv[1], "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
