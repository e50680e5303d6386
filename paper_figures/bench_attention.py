"""Time one layer's masked GQA attention (+ o-projection) per implementation, cache length and width.

    python3 paper_figures/bench_attention.py --out DIR

Why: the fixed-width forwards attend over every cache row under a [T, L] mask, and at L of a few
thousand rows a forward slowed down far more than reading those rows costs. This isolates the
attention. Each variant is torch.compile'd (as the engine does) and captured in a CUDA graph;
times are medians of graph replays (CUDA events). Every variant is checked against the engine's
attention in fp32 first. Random bf16 inputs; prints a table and writes DIR/attention.csv.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from swiftspec_core.models.transformer import grouped_attention
from swiftspec_core.graphs import capture
from timing import median_ms


def _stacked(q, n_kv):
    """q [T, H, hd] -> [KV, G*T, hd], the engine's GQA layout (see grouped_attention)."""
    T, H, hd = q.shape
    return q.view(T, n_kv, H // n_kv, hd).permute(1, 2, 0, 3).reshape(n_kv, H // n_kv * T, hd)


def _unstacked(o, T):
    n_kv, GT, hd = o.shape
    return o.view(n_kv, GT // T, T, hd).permute(2, 0, 1, 3).reshape(T, -1)


def sdpa_bool(q, k, v, mask, n_kv):
    """What the engine ran before v6: SDPA under a boolean mask."""
    G = q.shape[1] // n_kv
    o = F.scaled_dot_product_attention(_stacked(q, n_kv), k.transpose(0, 1), v.transpose(0, 1),
                                       attn_mask=mask.repeat(G, 1))
    return _unstacked(o, q.shape[0])


def split_attention(q, k, v, mask, n_kv, chunks: int):
    """The engine's matmul attention with P @ V split over `chunks` slices of the rows (partial
    products summed: exact up to fp32 summation order)."""
    T, H, hd = q.shape
    L, G = k.shape[0], H // n_kv
    s = torch.matmul(_stacked(q, n_kv), k.permute(1, 2, 0)).float() * hd ** -0.5  # [KV, G*T, L]
    p = torch.softmax(s.masked_fill(~mask.repeat(G, 1), float("-inf")), dim=-1).to(q.dtype)
    pc = p.view(n_kv, G * T, chunks, L // chunks).transpose(1, 2)  # [KV, S, G*T, L/S]
    vc = v.transpose(0, 1).reshape(n_kv, chunks, L // chunks, hd)  # [KV, S, L/S, hd]
    return _unstacked(torch.matmul(pc, vc).float().sum(1).to(q.dtype), T)  # [KV, G*T, hd] summed


VARIANTS = {
    "sdpa-bool": sdpa_bool,
    "math": grouped_attention,  # the engine's
    "math-split16": lambda q, k, v, m, n: split_attention(q, k, v, m, n, 16),
    "math-split64": lambda q, k, v, m, n: split_attention(q, k, v, m, n, 64),
}
SHAPES = {"llama-3-8b": (32, 8, 128), "llama-3.2-1b": (32, 8, 64)}  # heads, kv heads, head dim


def block(fn):
    def attention_block(q, k, v, mask, wo, n_kv):
        return F.linear(fn(q, k, v, mask, n_kv), wo)
    return attention_block


def time_graph(fn, args, reps=100) -> float:
    """Median us of a graph replay of fn(*args)."""
    graph, _ = capture(lambda: fn(*args), warmups=3)
    return median_ms(graph.replay, reps, warmup=10)[1] * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="1024,4096")
    ap.add_argument("--widths", default="1,8,9")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    for model, (H, KV, hd) in SHAPES.items():
        for L in map(int, a.lengths.split(",")):
            for T in map(int, a.widths.split(",")):
                q = torch.randn(T, H, hd, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(L, KV, hd, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(L, KV, hd, device="cuda", dtype=torch.bfloat16)
                mask = torch.rand(T, L, device="cuda") < 0.9
                mask[:, 0] = True
                wo = torch.randn(H * hd, H * hd, device="cuda", dtype=torch.bfloat16) / (H * hd) ** 0.5
                ref = grouped_attention(q.float(), k.float(), v.float(), mask, KV)
                kv_bytes = 2 * L * KV * hd * 2
                for name, fn in VARIANTS.items():
                    got = fn(q, k, v, mask, KV).float()
                    err = (got - ref).abs().max().item()
                    compiled = torch.compile(block(fn), dynamic=False)
                    us = time_graph(compiled, (q, k, v, mask, wo, KV))
                    rows.append({"model": model, "L": L, "T": T, "variant": name, "us": round(us, 1), "max_err": err,
                                     "kv_floor_us": round(kv_bytes / 4.2e12 * 1e6, 1)})
                    print(f"{model:13s} L={L:5d} T={T} {name:13s} {us:8.1f} us  err {err:.2e}  "
                          f"(kv floor {rows[-1]['kv_floor_us']} us)", flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    df["commit"] = os.environ.get("SWIFTSPEC_COMMIT", "unknown")
    df["device"] = torch.cuda.get_device_name()
    df.to_csv(out / "attention.csv", index=False)


if __name__ == "__main__":
    main()
