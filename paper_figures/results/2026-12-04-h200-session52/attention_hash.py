"""Bitwise fingerprints of tree_attention's outputs and appended caches, to compare two builds of
cuda/attention*.cuh (session 52, warm-merge.patch: the same merge arithmetic, so the same bits):

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session52/attention_hash.py > hashes.json

70B, 8B and 1B shapes at TP 1, M = 1, 8, 9, 16, contexts 100 and 1000 (a chain block after them,
as the kernel bench's case), the append inside and apart; seeded random q/k/v (bf16)."""
import hashlib
import json

import torch

from swiftspec_bench.kernel_ops import chain_block
from swiftspec_bench.kernel_shapes import shard_args
from swiftspec_core.graphs import spans
from swiftspec_core.kernels import attention as attn
from swiftspec_core.models.rope import rope_tables


def fingerprint(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().cpu().view(torch.int16).numpy().tobytes()).hexdigest()[:16]


hashes = {}
for model in ("llama-3-70b", "llama-3-8b", "llama-3.2-1b"):
    a = shard_args(model, 1)
    H, KV, hd = a.n_heads, a.n_kv_heads, a.head_dim
    for context in (100, 1000):
        for m in (1, 8, 9, 16):
            for append in (True, False):
                torch.manual_seed(context * 100 + m)
                rows = context + m + 1
                span = next(s for s in spans(rows) if s >= context + m)
                k_cache = torch.randn(rows, KV, hd, device="cuda", dtype=torch.bfloat16)
                v_cache = torch.randn(rows, KV, hd, device="cuda", dtype=torch.bfloat16)
                qkv = torch.randn(m, (H + 2 * KV) * hd, device="cuda", dtype=torch.bfloat16)
                cos, sin = rope_tables(a, context + m, device="cuda")
                out = attn.tree_attention(qkv, chain_block(context, m), cos, sin, k_cache, v_cache, span, H, KV,
                                          append=append)
                key = f"{model} context {context} m {m} append {int(append)}"
                hashes[key] = fingerprint(out) + " " + fingerprint(k_cache) + " " + fingerprint(v_cache)
print(json.dumps(hashes, indent=1))
