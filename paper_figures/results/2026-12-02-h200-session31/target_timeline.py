"""Session 31 (v195): where the persistent target build's layer time goes (branch persistent-target).
Llama-3-8B shapes, random bf16 weights, context 1000, widths given: the forward as the kernel
bench times it (forward_graph), then one launch of its kernel with stamps (persistent_timeline.py:
a row a phase, medians over layers 2..), after two unstamped ones.
Usage: PYTHONPATH=. python3 target_timeline.py [--widths 1,8,16] [--context 1000]"""
from __future__ import annotations

import argparse

import torch

from paper_figures.persistent_timeline import STAMP_SLOTS, TARGET_PHASES, marks, sm_clock_ghz, summarize
from paper_figures.timing import device_line, print_rows
from swiftspec_bench.kernel_bench import build_shard, forward_graph, median_us, use_kernels
from swiftspec_core.kernels.persistent_target import ring_depth


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--widths", default="1,8,16")
    parser.add_argument("--context", type=int, default=1000)
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    device_line()
    engine = build_shard("llama-3-8b", 1, args.context + max(widths) + 1)
    use_kernels(engine, "persistent")
    for width in widths:
        graph, (forward, cache) = forward_graph(engine, width, args.context)
        us = median_us(graph, 1)
        target = forward.persistent
        layers = len(engine.layers)
        target.stamps = torch.zeros(layers * len(TARGET_PHASES) + 1, target.sms, STAMP_SLOTS, dtype=torch.int64,
                                    device="cuda")
        span = forward.span_for(args.context + width)
        for _ in range(3):  # the last launch's stamps are read
            target(forward.inputs, span)
        torch.cuda.synchronize()
        host = target.stamps.cpu().numpy()
        print(f"\n## width {width}, context {args.context}: the forward {us:.1f} us (graph replay median); "
              f"ring depth {ring_depth(width)}, SM clock {sm_clock_ghz(host):.2f} GHz\n")
        print_rows(summarize(host, TARGET_PHASES))
        print()
        print_rows(marks(host, TARGET_PHASES))
        del graph, forward, cache, target


if __name__ == "__main__":
    main()
