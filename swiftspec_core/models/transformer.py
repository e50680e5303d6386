"""One decoder stack for the Llama and Qwen2 families, read top to bottom.

A forward takes T tokens, writes their keys and values into the cache rows it is given and
attends over the first L cache rows under an explicit [T, L] mask. That one signature serves a
prefill (causal mask), a decode step, a draft expansion of w leaves and a tree verification.

Under tensor parallelism (`group.size > 1`) the weights a module holds are its rank's shard
(see sharding.py): q/k/v and gate/up column-parallel, o and down row-parallel (one all-reduce
each), embedding and lm_head split over the vocabulary.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..cache import KVCache
from ..comm.group import Group, SingleGroup
from .args import ModelArgs
from .rope import apply_rope, rope_tables


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # In float32 and back, as transformers does, so fp32 and bf16 both match it.
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)


class Layer(nn.Module):
    def __init__(self, args: ModelArgs, dtype: torch.dtype):
        super().__init__()
        a = args
        qkv_rows = (a.n_heads + 2 * a.n_kv_heads) * a.head_dim
        self.attn_norm = nn.Parameter(torch.ones(a.dim, dtype=dtype))
        self.wqkv = nn.Parameter(torch.empty(qkv_rows, a.dim, dtype=dtype))
        self.bqkv = nn.Parameter(torch.zeros(qkv_rows, dtype=dtype)) if a.qkv_bias else None
        self.wo = nn.Parameter(torch.empty(a.dim, a.n_heads * a.head_dim, dtype=dtype))
        self.mlp_norm = nn.Parameter(torch.ones(a.dim, dtype=dtype))
        self.w_gate_up = nn.Parameter(torch.empty(2 * a.ffn_dim, a.dim, dtype=dtype))
        self.w_down = nn.Parameter(torch.empty(a.dim, a.ffn_dim, dtype=dtype))


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs, *, dtype=torch.float32, device="cpu", group: Group | None = None,
                 vocab_start: int = 0, full_vocab: int | None = None, max_seq_len: int = 4096):
        """args are this rank's local shapes; full_vocab is the unsharded vocabulary size."""
        super().__init__()
        self.args, self.group = args, group or SingleGroup()
        self.vocab_start = vocab_start
        self.max_seq_len = max_seq_len  # positions the rope tables cover; caches are this long
        self.full_vocab = full_vocab or args.vocab_size
        with torch.device(device):
            self.embed = nn.Parameter(torch.empty(args.vocab_size, args.dim, dtype=dtype))
            self.layers = nn.ModuleList(Layer(args, dtype) for _ in range(args.n_layers))
            self.norm = nn.Parameter(torch.ones(args.dim, dtype=dtype))
            self.lm_head = None if args.tie_embeddings else nn.Parameter(
                torch.empty(args.vocab_size, args.dim, dtype=dtype))
        if str(device) == "meta":  # shapes only: build_engine makes the tables for real
            cos = sin = torch.empty(max_seq_len, args.head_dim, device="meta")
        else:
            cos, sin = rope_tables(args, max_seq_len, device=device)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    @property
    def device(self) -> torch.device:
        return self.embed.device

    def new_cache(self, max_len: int) -> KVCache:
        return KVCache(self.args, max_len, self.dtype, self.device)

    def embed_tokens(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.group.size == 1:
            return F.embedding(tokens, self.embed)
        local = tokens - self.vocab_start  # vocab-parallel: each rank owns a slice of rows
        mine = (local >= 0) & (local < self.args.vocab_size)
        x = F.embedding(local.clamp(0, self.args.vocab_size - 1), self.embed) * mine[:, None].to(self.dtype)
        return self.group.all_reduce(x)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, rows: torch.Tensor,
                mask: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """tokens, positions, rows: [T] int64; mask: [T, L] bool over cache rows. -> [T, vocab] fp32."""
        a = self.args
        T, L = tokens.shape[0], mask.shape[1]
        cos, sin = self.cos[positions], self.sin[positions]
        x = self.embed_tokens(tokens)  # [T, dim]
        for i, layer in enumerate(self.layers):
            h = rms_norm(x, layer.attn_norm, a.norm_eps)
            qkv = F.linear(h, layer.wqkv, layer.bqkv)  # [T, (H + 2 KV) * hd]
            q, k, v = qkv.split([a.n_heads * a.head_dim, a.n_kv_heads * a.head_dim,
                                 a.n_kv_heads * a.head_dim], dim=-1)
            q = apply_rope(q.view(T, a.n_heads, a.head_dim), cos, sin)
            k = apply_rope(k.view(T, a.n_kv_heads, a.head_dim), cos, sin)
            cache.write(i, rows, k, v.view(T, a.n_kv_heads, a.head_dim))
            keys, values = cache.view(i, L)  # [L, KV, hd]
            o = F.scaled_dot_product_attention(
                q.transpose(0, 1)[None], keys.transpose(0, 1)[None], values.transpose(0, 1)[None],
                attn_mask=mask[None, None], enable_gqa=True)  # [1, H, T, hd]
            o = o[0].transpose(0, 1).reshape(T, a.n_heads * a.head_dim)
            x = x + self.group.all_reduce(F.linear(o, layer.wo))
            h = rms_norm(x, layer.mlp_norm, a.norm_eps)
            gate, up = F.linear(h, layer.w_gate_up).chunk(2, dim=-1)
            x = x + self.group.all_reduce(F.linear(F.silu(gate) * up, layer.w_down))
        x = rms_norm(x, self.norm, a.norm_eps)
        head = self.embed if self.lm_head is None else self.lm_head
        logits = self.group.all_gather(F.linear(x, head))
        return logits[:, : self.full_vocab].float()
