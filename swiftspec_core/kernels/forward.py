"""A fixed-width forward made of our kernels (`--kernels fused`): three layer bodies (the norms inside
the GEMMs, or as kernels between them: norms_in_gemms says which; one GPU's AWQ layers with the
norms in the GEMMs' epilogues), each top to bottom.

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
from .attention import tree_attention
from .awq_allreduce import awq_gemm_allreduce
from .awq_gemm import awq_gemm, awq_swiglu
from .awq_norms import NextNorm, awq_gemm_norms, awq_swiglu_norms, norm_sums
from .gemm import gemm
from .gemm_epilogue import fused_gemm_allreduce, gemm_swiglu
from ..staged import TOKEN
from .norm import add_rmsnorm, rmsnorm


# One GPU in bf16 runs each layer's RMSNorms inside the GEMMs after them (gemm's norm=) and its
# residual adds in the GEMMs before them (residual=) where that measured faster with PDL on (NOTES
# v59-v61): models of width <= 3072 (Llama-3.2-1B -55 us a forward, 3.2-3B -44, Qwen2.5-Coder-1.5B
# -17, 0.5B -36); at Llama-3-8B's 4096 the norm kernels, which PDL hides behind the next GEMM's
# first weight loads, were 135 us faster. A rule on the model, not a timing at start-up: a
# model's bits never depend on a measurement.
NORMS_IN_GEMMS_MAX_DIM = 3072


def norms_in_gemms(model) -> bool:
    """Whether the fused forward runs the norms inside the GEMMs (else as kernels between them)."""
    a = model.args
    return a.quant != "awq" and model.group.size == 1 and a.dim <= NORMS_IN_GEMMS_MAX_DIM


# The projections whose x the one-GPU AWQ forward (_awq_norms_in_epilogues_forward) writes in fp16
# where the model runs bf16 (o_proj reads the attention's bf16 output; layer 0's qkv the first
# norm kernel's): kernel rows time those calls on fp16 x (swiftspec_bench/kernel_shapes.py).
AWQ_FP16_X = ("qkv", "gate_up", "down")


def awq_norms_in_epilogues(model) -> bool:
    """Whether the fused forward runs AWQ layers with their norms in the GEMMs' epilogues (awq_norms.py:
    one GPU, a width of whole 64-column tiles)."""
    a = model.args
    return a.quant == "awq" and model.group.size == 1 and a.dim % 64 == 0


@torch.inference_mode()
def fused_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """block: [T, 4 + V] int64 on the device; span: the cache rows attention may read.
    -> [T, vocab] fp32 logits."""
    if awq_norms_in_epilogues(model):
        body = _awq_norms_in_epilogues_forward
    else:
        body = _norms_in_gemms_forward if norms_in_gemms(model) else _norm_kernels_forward
    return body(model, block, span, cache)


def _norms_in_gemms_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """One GPU, bf16: a layer is five kernels: qkv (the attention norm inside), the attention (the
    cache append inside), o_proj (+ the residual), gate_up with SwiGLU (the MLP norm inside),
    down_proj (+ the residual). The final norm stays a kernel: lm_head's thousands of blocks would each copy the norm
    weights (NOTES v59)."""
    a = model.args
    h = model.embed_tokens(block[:, TOKEN])  # [T, dim]: the residual stream, added to in place
    for i, layer in enumerate(model.layers):
        qkv = gemm(h, layer.wqkv, layer.bqkv, norm=(layer.attn_norm, a.norm_eps))  # [T, (H + 2 KV) * hd]
        attn = _attention(model, i, qkv, block, span, cache)
        gemm(attn, layer.wo, residual=h, out=h)
        gemm(gemm_swiglu(h, layer.w_gate_up, norm=(layer.mlp_norm, a.norm_eps)), layer.w_down, residual=h, out=h)
    return head_logits(model, h)


def _norm_kernels_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """The norm kernels (each with the residual add before it) between the projections, the
    row-parallel ones all-reduced (a no-op on one GPU)."""
    a, group = model.args, model.group
    # The layer projections: AWQ triples through the dequantizing GEMM under --quant awq, else the
    # bf16 GEMM (lm_head is bf16 either way).
    project = _awq_project if a.quant == "awq" else gemm
    mlp_in = _awq_swiglu if a.quant == "awq" else gemm_swiglu  # swiglu(gate_up projection)
    row_parallel = _row_parallel(group, project, a.quant)  # o_proj, down_proj and their all-reduce
    h = model.embed_tokens(block[:, TOKEN])  # [T, dim]: the residual stream
    m = torch.zeros_like(h)  # the last block's output, added to h at the start of the next
    for i, layer in enumerate(model.layers):
        x, y = add_rmsnorm(h, m, layer.attn_norm, a.norm_eps)
        qkv = project(y, layer.wqkv, layer.bqkv)  # [T, (H + 2 KV) * hd]
        o = row_parallel(_attention(model, i, qkv, block, span, cache), layer.wo)
        h, y = add_rmsnorm(x, o, layer.mlp_norm, a.norm_eps)
        m = row_parallel(mlp_in(y, layer.w_gate_up), layer.w_down)
    _, y = add_rmsnorm(h, m, model.norm, a.norm_eps)
    logits = group.all_gather(gemm(y, _head(model)))
    return logits[:, : model.full_vocab].float()


def _awq_norms_in_epilogues_forward(model, block: torch.Tensor, span: int, cache: KVCache) -> torch.Tensor:
    """One GPU, AWQ layers: a layer is four kernels: qkv (times each row's attention-norm scale),
    the attention, o_proj (+ the residual; the MLP norm's x and sums), gate_up with SwiGLU (times
    the MLP norm's scale), down_proj (+ the residual; the next attention norm's x and sums). The
    first layer's attention norm and the final norm stay kernels (no GEMM before them). Where the
    model runs bf16, the x's the GEMMs write for qkv, gate_up and down are fp16, read by the
    fp16-operand kernels (awq_gemm.py: ~10% faster on the 70B down and qkv); o_proj's x is the
    attention's bf16 output. A norm's fp16 x is h * g / model.norm_x_unit (awq_norms.py: fp16's
    headroom where a norm weight passes 1)."""
    a = model.args
    h = model.embed_tokens(block[:, TOKEN])  # [T, dim]: the residual stream, added to in place
    operand = torch.float16 if h.dtype == torch.bfloat16 else h.dtype  # the GEMMs' x but o_proj's
    unit = model.norm_x_unit if operand == torch.float16 else 1.0
    # x = h * g / unit, sums of h^2
    nxt = NextNorm(None, torch.empty_like(h, dtype=operand), norm_sums(a.dim, h.device), unit)
    for i, layer in enumerate(model.layers):
        if i == 0:
            qkv = awq_gemm(rmsnorm(h, layer.attn_norm, a.norm_eps), weight_of(layer.wqkv), layer.bqkv)
        else:
            qkv = awq_gemm_norms(nxt.x, weight_of(layer.wqkv), layer.bqkv, row_sums=nxt.sums, eps=a.norm_eps,
                                 x_unit=unit)
        attn = _attention(model, i, qkv, block, span, cache)
        nxt.weight = layer.mlp_norm
        awq_gemm_norms(attn, weight_of(layer.wo), out=h, residual=h, next_norm=nxt)
        act = awq_swiglu_norms(nxt.x, weight_of(layer.w_gate_up), row_sums=nxt.sums, eps=a.norm_eps,
                               x_unit=unit)  # x's dtype
        last = i == len(model.layers) - 1
        nxt.weight = None if last else model.layers[i + 1].attn_norm
        awq_gemm_norms(act, weight_of(layer.w_down), out=h, residual=h, next_norm=None if last else nxt)
    return head_logits(model, h)


def _attention(model, i: int, qkv, block, span: int, cache: KVCache) -> torch.Tensor:
    """Layer i's new keys and values into the cache and its tree attention, in one kernel (the append
    inside: NOTES v98): -> [T, H * hd]."""
    a = model.args
    return tree_attention(qkv, block, model.cos, model.sin, cache.k[i], cache.v[i], span, a.n_heads, a.n_kv_heads,
                          append=True)


def _head(model) -> torch.Tensor:
    return model.embed if model.lm_head is None else model.lm_head


def head_logits(model, h: torch.Tensor) -> torch.Tensor:
    """One GPU's logits from the last layer's output h [T, dim]: the final RMSNorm, lm_head, the
    vocabulary's real rows in fp32 (the persistent forwards end with it too) -> [T, vocab]."""
    return gemm(rmsnorm(h, model.norm, model.args.norm_eps), _head(model))[:, : model.full_vocab].float()


def _row_parallel(group, project, quant: str):
    """x, w -> the all-reduced projection: with the group's LL all-reduce (TP with --kernels
    fused), the GEMM and the all-reduce in one kernel (bf16 weights: the same bits as gemm then
    the all-reduce; AWQ: as awq_gemm at its one-block-a-tile plan, then the all-reduce); else the
    projection, then the group's all-reduce (a no-op on one GPU)."""
    ll = getattr(group, "low_latency", None)
    if ll is not None and quant == "awq":
        return lambda x, w: awq_gemm_allreduce(x, weight_of(w), ll)
    if ll is not None:
        return lambda x, w: fused_gemm_allreduce(x, w, ll)
    return lambda x, w: group.all_reduce(project(x, w))


def _awq_project(x: torch.Tensor, p, bias: torch.Tensor | None = None) -> torch.Tensor:
    """gemm's signature over a layer's AWQLinear (transformer.py)."""
    return awq_gemm(x, weight_of(p), bias)


def _awq_swiglu(x: torch.Tensor, p) -> torch.Tensor:
    """gemm_swiglu's signature over an AWQ gate_up: the dequantizing GEMM with SwiGLU in its epilogue."""
    return awq_swiglu(x, weight_of(p))
