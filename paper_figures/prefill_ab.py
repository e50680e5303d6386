"""A/B of a prefill's attention on one GPU: the call as transformer.grouped_attention made it at
2b651c6 (SDPA with enable_gqa, torch's pick of kernel: cuDNN's on H200) against today's (K and V
repeated to every q head, PREFILL_BACKENDS: flash, then memory-efficient), each prompt length
timed at its first call and warm.

    PYTHONPATH=. python3 paper_figures/prefill_ab.py [--model llama-3-8b] [--lengths 40,131,477,1200,3283]

Why: in split rows the target's prefill took ~60 ms for prompts of 40-600 tokens but 11-22 ms for
the few lengths an earlier request had already seen (session7/c2), which points at a per-length
setup cost; cuDNN's SDPA builds an execution plan per shape. Every decoder prefills the same way,
so this is prefill latency (time to first token and tok/s with the prefill), not speculation.
Random bf16 weights; each length is a fresh prompt of that many tokens; prints a markdown table.
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from swiftspec_core.models import transformer
from swiftspec_core.models.loading import load_engine
from timing import device_line, median_ms

TODAY = transformer.grouped_attention


def before(q, k, v, mask, n_kv):
    """grouped_attention's prefill as of 2b651c6 (a masked call: today's, unchanged since)."""
    if mask is not None:
        return TODAY(q, k, v, mask, n_kv)
    T, H, hd = q.shape
    o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None],
                                       is_causal=True, enable_gqa=True)
    return o[0].transpose(0, 1).reshape(T, H * hd)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--lengths", default="40,131,477,1200,3283")
    a = ap.parse_args()
    device_line()
    engine = load_engine(a.model, weights="random", dtype=torch.bfloat16, device="cuda", max_seq_len=4096)
    lengths = [int(x) for x in a.lengths.split(",")]
    print(f"{a.model}, random bf16 weights: prefill wall ms (median CUDA-event ms)\n")
    print("| prompt tokens | attention | first call | warm (median of 5) |")
    print("|---|---|---|---|")
    for i, n in enumerate(lengths):
        for side, (name, attention) in enumerate((("2b651c6 (enable_gqa)", before), ("today", TODAY))):
            transformer.grouped_attention = attention  # the module global the blocks call
            # A length neither side has run before (n + 1, n + 2), so the first call is cold.
            tokens = [(7 * j + 11 * i) % 1000 + 1 for j in range(n + 1 + side)]
            cache = engine.new_cache(engine.max_seq_len)
            first = median_ms(lambda: engine.prefill(tokens, cache), reps=1)
            warm = median_ms(lambda: engine.prefill(tokens, cache), reps=5, warmup=1)
            print(f"| {len(tokens)} | {name} | {first[0]:.1f} ({first[1]:.1f}) | {warm[0]:.1f} ({warm[1]:.1f}) |")
    transformer.grouped_attention = TODAY


if __name__ == "__main__":
    main()
