"""Where a fused forward's time goes: every kernel of its graph replay, from torch's profiler.

    PYTHONPATH=. python3 paper_figures/profile_forward.py --models llama-3.2-1b,llama-3-8b \
        [--width 8] [--context 1000] [--visible N] [--replays 5] [--quant awq] [--impl persistent] [--csv FILE]

Builds each model at its real shapes on one GPU (random bf16 weights; with --quant awq the layer
projections round-to-nearest quantized, as `run --weights random --quant awq` builds them) on our
kernel set, captures the forward of `width` tree tokens after `context` cached ones as the decoders
run it (kernel_bench's forward_graph: graphs.make_forward, its staged block --visible rows a token
wide, the drafter's 385 at the run defaults, else the width; --impl persistent: the layers in one
persistent kernel, kernels/persistent_forward.py, where the model takes it), times the replay with CUDA events
(median), then replays it
under torch.profiler and tables its kernels by their place in a layer (the norms, qkv, append_kv,
attention, o, gate_up, down; embed, lm_head and the rest outside the layers): calls a forward,
median us a call, us a forward. The span (first kernel's start to last kernel's end) minus the
kernels' sum is the time between kernels. Under PDL (the default) a kernel that starts early counts
its wait for the one before, so the sum can pass the span: SWIFTSPEC_PDL=0 gives each kernel's own
time.
"""
from __future__ import annotations

import argparse
import os
import statistics
from collections import defaultdict

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from swiftspec_bench.kernel_bench import build_shard, forward_graph, median_us, use_kernels
from swiftspec_core.runtime.floor import copy_bandwidth
from swiftspec_bench.kernel_shapes import BF16

ORDER = ("embed", "layers (persistent)", "norm (attention)", "qkv", "append_kv", "attention", "o", "norm (mlp)", "gate_up", "down",
         "norm (final)", "lm_head", "after lm_head")


def label_kernels(names: list[str]) -> list[str]:
    """One forward's kernel names in launch order -> each one's place. Norm kernels (the sharded
    forward's) are counted: attention, mlp, ..., final. A projection is named by what it follows:
    qkv comes before append_kv or the attention, o after the attention, gate_up is the SwiGLU GEMM (or the GEMM and
    the swiglu kernel after it), down follows gate_up, lm_head is the last projection; kernels before
    the first layer are the embedding's, after lm_head the rest (one GPU's forward has no norm
    kernels: its norms are inside qkv, gate_up and lm_head; an AWQ forward on one GPU keeps the first
    and the final, the others being in its GEMMs' epilogues)."""
    n_norms = sum("rmsnorm" in n for n in names)
    projections = [i for i, n in enumerate(names) if "gemm" in n]
    labels, seen_norms, prev = [], 0, "embed"
    for i, n in enumerate(names):
        nxt = names[i + 1] if i + 1 < len(names) else ""
        if "rmsnorm" in n:
            seen_norms += 1
            label = ("norm (final)" if seen_norms == n_norms else
                     "norm (attention)" if seen_norms % 2 else "norm (mlp)")
        elif "append_kv" in n:
            label = "append_kv"
        elif "persistent_layers" in n:  # every layer in one launch: what runs before it is the embedding's
            label = "layers (persistent)"
        elif "tree_attention" in n:
            label = "attention"
        elif "gemm" in n and prev == "attention":
            label = "o"  # before the SwiGLU rule: with the AWQ norms in the epilogues o comes just before it
        elif "swiglu" in n or ("gemm" in n and "swiglu" in nxt and "gemm" not in nxt):
            label = "gate_up"
        elif "gemm" in n:
            label = ("lm_head" if i == projections[-1] else "qkv" if "append_kv" in nxt or "tree_attention" in nxt else
                     "down" if prev == "gate_up" else prev)
        else:
            label = "after lm_head" if prev == "lm_head" or prev == "after lm_head" else prev
        labels.append(label)
        if not label.startswith("norm"):
            prev = label
    return labels


def kernel_events(graph, replays: int = 1) -> list:
    """The kernel events (torch.profiler, CUDA) of `replays` replays of a captured graph, by start."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize()
    return sorted((e for e in prof.events() if e.device_type == DeviceType.CUDA and e.time_range.elapsed_us() > 0),
                  key=lambda e: e.time_range.start)


def profile_model(model: str, width: int, context: int, replays: int, quant: str = "none",
                  impl: str = "ours", visible: int | None = None) -> tuple[list[dict], dict]:
    engine = build_shard(model, 1, context + width + 1, quant=quant)
    use_kernels(engine, impl)
    graph, keep = forward_graph(engine, width, context, visible)
    replay_us = median_us(graph, 1)
    kernels = kernel_events(graph, replays)
    floor_us = engine.args.weight_bytes(BF16) / copy_bandwidth() * 1e6  # 4-bit codes where AWQ
    summary = dict(model=model, impl=impl, quant=quant, width=width, visible=visible or width, context=context,
                   replay_us=replay_us, floor_us=floor_us,
                   kernels=len(kernels), pdl=os.environ.get("SWIFTSPEC_PDL", "1"))
    if not kernels or len(kernels) % replays:
        summary["note"] = f"{len(kernels)} kernel events for {replays} replays: not tabled"
        return [], summary
    per = len(kernels) // replays
    durations, names, spans = defaultdict(list), defaultdict(set), []
    for r in range(replays):
        one = kernels[r * per:(r + 1) * per]
        spans.append(one[-1].time_range.end - one[0].time_range.start)
        for label, e in zip(label_kernels([e.name for e in one]), one):
            durations[label].append(e.time_range.elapsed_us())
            names[label].add(e.name[:40])
    rows_out = []
    for label in sorted(durations, key=lambda x: ORDER.index(x) if x in ORDER else len(ORDER)):
        d = durations[label]
        rows_out.append(dict(model=model, place=label, calls=len(d) // replays, median_us=statistics.median(d),
                             forward_us=sum(d) / replays, kernels=" ".join(sorted(names[label]))))
    summary.update(span_us=statistics.median(spans), kernel_sum_us=sum(r["forward_us"] for r in rows_out))
    del keep, engine, graph
    torch.cuda.empty_cache()
    return rows_out, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama-3.2-1b,llama-3-8b")
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--context", type=int, default=1000)
    parser.add_argument("--visible", type=int, default=None,
                        help="visible rows a token in the staged block (a draft step's: the draft tree's rows + 1)")
    parser.add_argument("--replays", type=int, default=5)
    parser.add_argument("--quant", choices=("none", "awq"), default="none")
    parser.add_argument("--impl", choices=("ours", "persistent"), default="ours",
                        help="our fused kernels, or the persistent forward's layers (Llama-3.2-1B only)")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--body", choices=("rule", "gemms", "kernels"), default="rule",
                        help="the layer body: forward.norms_in_gemms's choice, or forced (the norms inside the "
                             "GEMMs, or norm kernels between them) for an A/B")
    args = parser.parse_args()
    if args.body != "rule":
        from swiftspec_core.kernels import forward

        forward.norms_in_gemms = lambda model: args.body == "gemms"
    everything = []
    for model in args.models.split(","):
        rows, s = profile_model(model, args.width, args.context, args.replays, args.quant, args.impl, args.visible)
        print(f"\n{model} (quant {args.quant}, kernels {args.impl}), width {s['width']}, context {s['context']}, "
              f"visible {s['visible']}, SWIFTSPEC_PDL={s['pdl']}, "
              f"layer body: {args.body}, "
              f"replay {s['replay_us']:.1f} us (CUDA events, median), "
              f"floor {s['floor_us']:.1f} us ({s['replay_us'] / s['floor_us']:.2f}x); {s['kernels']} kernel events"
              + (f"; span {s['span_us']:.1f} us, kernels' sum {s['kernel_sum_us']:.1f} us" if rows else "")
              + (f"; {s['note']}" if "note" in s else ""))
        if rows:
            print("\n| place | calls | median us | us a forward | kernels |\n|---|---|---|---|---|")
            for r in rows:
                print(f"| {r['place']} | {r['calls']} | {r['median_us']:.2f} | {r['forward_us']:.1f} | {r['kernels']} |")
        everything += [r | {k: s[k] for k in ("impl", "quant", "width", "context", "pdl", "replay_us")} for r in rows]
    if args.csv and everything:
        import pandas as pd

        pd.DataFrame(everything).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
