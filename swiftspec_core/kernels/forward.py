"""A fixed-width forward made of our kernels (`--kernels fused`): one layer, top to bottom.

It takes what graphs.PaddedForward stages for every forward, the block [T, 4 + V] of (token,
position, cache row, prefix length, visible rows), instead of a [T, L] mask: tree_attention reads
each query's keys by position from it. Every op here is row-invariant, so a token's logits do not
depend on the forward's width, its row in it or where its ancestors sit in the cache, and every
decoder emits exactly ar's tokens in bf16. Prefills stay on the torch path (every decoder prefills
a prompt the same way, so they agree there too).
"""
from __future__ import annotations

import torch

from ..cache import KVCache
from ..models.transformer import weight_of
from .attention import append_kv, tree_attention
from .awq_gemm import awq_gemm
from .gemm import gemm
from .gemm_epilogue import fused_gemm_allreduce, gemm_swiglu
from ..staged import POSITION, ROW, TOKEN
from .norm import add_rmsnorm, rmsnorm, swiglu


@torch.inference_mode()
def fused_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """block: [T, 4 + V] int64 on the device; span: the cache rows attention may read.
    -> [T, vocab] fp32 logits."""
    a = model.args
    if a.quant != "awq" and model.group.size == 1:
        return _one_gpu_forward(model, block, span, cache)
    return _sharded_forward(model, block, span, cache)


def _one_gpu_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """bf16 on one GPU: each layer's RMSNorms ride in the GEMM after them and each residual add in
    the one before it (gemm's norm= and residual=), so a layer is six kernels: qkv, the cache
    append, the attention, o_proj, gate_up with SwiGLU, down_proj (NOTES v57). The final norm stays
    a kernel: lm_head's thousands of blocks would each copy the norm weights (NOTES v59)."""
    a = model.args
    positions, rows = block[:, POSITION].contiguous(), block[:, ROW].contiguous()  # [T] each
    h = model.embed_tokens(block[:, TOKEN])  # [T, dim]: the residual stream, added to in place
    for i, layer in enumerate(model.layers):
        qkv = gemm(h, layer.wqkv, layer.bqkv, norm=(layer.attn_norm, a.norm_eps))  # [T, (H + 2 KV) * hd]
        attn = _attention(model, i, qkv, block, positions, rows, span, cache)
        gemm(attn, layer.wo, residual=h, out=h)
        gemm(gemm_swiglu(h, layer.w_gate_up, norm=(layer.mlp_norm, a.norm_eps)), layer.w_down, residual=h, out=h)
    return gemm(rmsnorm(h, model.norm, a.norm_eps), _head(model))[:, : model.full_vocab].float()


def _sharded_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """Tensor-parallel or AWQ: the norm kernels (each with the residual add before it) between the
    projections, the row-parallel ones all-reduced."""
    a, group = model.args, model.group
    # The layer projections: AWQ triples through the dequantizing GEMM under --quant awq, else the
    # bf16 GEMM (lm_head is bf16 either way).
    project = _awq_project if a.quant == "awq" else gemm
    mlp_in = _awq_swiglu if a.quant == "awq" else gemm_swiglu  # swiglu(gate_up projection)
    row_parallel = _row_parallel(group, project, a.quant)  # o_proj, down_proj and their all-reduce
    positions, rows = block[:, POSITION].contiguous(), block[:, ROW].contiguous()  # [T] each
    h = model.embed_tokens(block[:, TOKEN])  # [T, dim]: the residual stream
    m = torch.zeros_like(h)  # the last block's output, added to h at the start of the next
    for i, layer in enumerate(model.layers):
        x, y = add_rmsnorm(h, m, layer.attn_norm, a.norm_eps)
        qkv = project(y, layer.wqkv, layer.bqkv)  # [T, (H + 2 KV) * hd]
        o = row_parallel(_attention(model, i, qkv, block, positions, rows, span, cache), layer.wo)
        h, y = add_rmsnorm(x, o, layer.mlp_norm, a.norm_eps)
        m = row_parallel(mlp_in(y, layer.w_gate_up), layer.w_down)
    _, y = add_rmsnorm(h, m, model.norm, a.norm_eps)
    logits = group.all_gather(gemm(y, _head(model)))
    return logits[:, : model.full_vocab].float()


def _attention(model, i: int, qkv, block, positions, rows, span: int, cache: KVCache) -> torch.Tensor:
    """Layer i's new keys and values into the cache, then its tree attention: -> [T, H * hd]."""
    a = model.args
    append_kv(qkv, positions, rows, model.cos, model.sin, cache.k[i], cache.v[i], a.n_heads, a.n_kv_heads)
    return tree_attention(qkv, block, model.cos, model.sin, cache.k[i], cache.v[i], span, a.n_heads, a.n_kv_heads)


def _head(model) -> torch.Tensor:
    return model.embed if model.lm_head is None else model.lm_head


def _row_parallel(group, project, quant: str):
    """x, w -> the all-reduced projection: with the group's LL all-reduce (TP with --kernels
    fused) and bf16 weights, the GEMM and the all-reduce in one kernel (the same bits as the pair);
    else the projection, then the group's all-reduce (a no-op on one GPU)."""
    ll = getattr(group, "low_latency", None)
    if ll is not None and quant != "awq":
        return lambda x, w: fused_gemm_allreduce(x, w, ll)
    return lambda x, w: group.all_reduce(project(x, w))


def _awq_project(x: torch.Tensor, p, bias: torch.Tensor | None = None) -> torch.Tensor:
    """gemm's signature over a layer's AWQLinear (transformer.py)."""
    return awq_gemm(x, weight_of(p), bias)


def _awq_swiglu(x: torch.Tensor, p) -> torch.Tensor:
    """gemm_swiglu's signature over an AWQ gate_up: the dequantizing GEMM, then SwiGLU."""
    return swiglu(_awq_project(x, p))
