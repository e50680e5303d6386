"""Rotary position embedding: default, linear (deepseek-coder) and llama3 frequency scaling."""
from __future__ import annotations

import math

import torch

from .args import ModelArgs


def inverse_frequencies(args: ModelArgs) -> torch.Tensor:
    """[head_dim // 2] float32 inverse frequencies, scaled as the config asks."""
    d = args.head_dim
    inv = 1.0 / (args.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    scaling = dict(args.rope_scaling or ())
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old_ctx = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        smooth = (old_ctx / wavelen - low) / (high - low)
        mid = (1 - smooth) * inv / factor + smooth * inv
        inv = torch.where(wavelen > old_ctx / low, inv / factor, torch.where(wavelen < old_ctx / high, inv, mid))
    elif kind != "default":
        raise ValueError(f"rope scaling {kind!r} is not supported (default, linear, llama3 are)")
    return inv.float()


def rope_tables(args: ModelArgs, max_len: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin: [max_len, head_dim] float32, in the half-split layout of HF's rotate_half."""
    inv = inverse_frequencies(args).to(device)
    freqs = torch.outer(torch.arange(max_len, device=device, dtype=torch.float32), inv)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [T, heads, head_dim]; cos, sin: [T, head_dim] (rows at the tokens' positions)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    cos, sin = cos[:, None, :].to(x.dtype), sin[:, None, :].to(x.dtype)
    return x * cos + rotated * sin
