"""The calls `swiftspec-bench kernels` times, one builder per op: each makes a case's inputs on
the GPU (random bf16 at its shard's shapes) and returns (call(i), calls): call(i) runs the i-th
call of a captured graph, reading copy i mod n of the weights or caches, where n copies are
enough that a graph's calls read more than twice the L2 cache (as a forward's layers do, each
reading its own), and calls (at least CALLS) covers them all."""
from __future__ import annotations

import importlib
import math

import torch
import torch.nn.functional as F

from swiftspec_core.graphs import spans
from swiftspec_core import staged
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.models.awq import GROUP as AWQ_GROUP
from swiftspec_core.staged import POSITION, VISIBLE

from .kernel_shapes import BF16, Case, gemm_shape, kv_bytes, shard_args, x_dtype

CALLS = 20  # calls captured in one graph at least
MAX_COPIES = 128


class Skipped(Exception):
    """A case that cannot run here; str() says why (it goes to kernels.md's notes)."""


def l2_bytes() -> int:
    """The current GPU's L2 cache (an H100's 50 MiB where torch does not say)."""
    return getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or 50 << 20


def input_copies(nbytes: int) -> int:
    """Copies of an input of `nbytes` whose reads in a row exceed twice the L2 cache."""
    return max(1, min(MAX_COPIES, math.ceil(2 * l2_bytes() / nbytes)))


def ours(module: str, name: str):
    """Our kernel entry `name` of swiftspec_core.kernels.<module>, or Skipped if it is not there."""
    try:
        return getattr(importlib.import_module(f"swiftspec_core.kernels.{module}"), name)
    except (ImportError, AttributeError) as exc:
        raise Skipped(f"swiftspec_core.kernels.{module}.{name} is not available ({exc})") from None


def randn(*shape, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale


# ---- ops on one GPU: each returns (call(i), calls) ----

def gemm_call(case: Case):
    n, k, has_bias = gemm_shape(shard_args(case.model, case.tp), case.projection)
    copies = input_copies(BF16 * n * k)
    ws = [randn(n, k, scale=0.02) for _ in range(copies)]
    bias = randn(n, scale=0.02) if has_bias else None
    x = randn(case.m, k)
    if case.impl == "ours":
        gemm, out = ours("gemm", "gemm"), torch.empty(case.m, n, device="cuda", dtype=torch.bfloat16)
        return (lambda i: gemm(x, ws[i % copies], bias, out=out)), max(CALLS, copies)
    return (lambda i: F.linear(x, ws[i % copies], bias)), max(CALLS, copies)


def random_awq(n: int, k: int):
    """Random codes, zero points and scales of an [n, k] weight in AWQ's layout (models/awq.py),
    tiled as the engine holds them for the kernel: the bytes it reads, without quantizing a bf16
    weight first."""
    from swiftspec_core.models.awq import GROUP, AWQWeight, tile

    def codes(rows: int) -> torch.Tensor:
        return torch.randint(-2**31, 2**31 - 1, (rows, n // 8), device="cuda", dtype=torch.int32)
    scales = (torch.rand(k // GROUP, n, device="cuda") * 0.01 + 1e-3).to(torch.float16)
    return tile(AWQWeight(codes(k), codes(k // GROUP), scales))


def awq_weights(n: int, k: int) -> tuple[list, int]:
    """(weights, copies): enough copies of an [n, k] projection's random 4-bit weights that a
    graph's calls read more than twice the L2 cache."""
    copies = input_copies(awq_bytes(n * k, AWQ_GROUP))
    return [random_awq(n, k) for _ in range(copies)], copies


def awq_gemm_call(case: Case):
    """Our dequantizing GEMM on a layer projection's 4-bit weights (args.awq_bytes)."""
    n, k, has_bias = gemm_shape(shard_args(case.model, case.tp), case.projection)
    awq_gemm = ours("awq_gemm", "awq_gemm")
    ws, copies = awq_weights(n, k)
    bias = randn(n, scale=0.02) if has_bias else None
    x = randn(case.m, k).to(getattr(torch, x_dtype(case)))  # fp16 where the one-GPU engine feeds it
    out = torch.empty(case.m, n, device="cuda", dtype=torch.bfloat16)
    return (lambda i: awq_gemm(x, ws[i % copies], bias, out=out)), max(CALLS, copies)


def chain_block(context: int, m: int, device="cuda") -> torch.Tensor:
    """graphs.py's staged block [m, 4 + m] of a chain of m tree tokens after `context` verified
    ones at cache rows context.. (each sees its ancestors: the densest tree mask of m tokens).
    Unused visible slots repeat the token's own row, as PaddedForward fills them."""
    block = torch.zeros(m, VISIBLE + m, dtype=torch.long)
    rows = list(range(context, context + m))
    staged.write(block.numpy(), [0] * m, rows, rows, context, [rows[:j + 1] for j in range(m)], scratch_row=0)
    return block.to(device)


def sdpa_masked(q, k, v, mask, n_kv: int) -> torch.Tensor:
    """SDPA under a boolean mask in grouped_attention's layout (the G query heads of a kv head as
    G*T rows of one batch entry, no key copies). q [T, H, hd]; k, v [L, KV, hd]; mask [T, L]."""
    T, H, hd = q.shape
    G = H // n_kv
    qg = q.view(T, n_kv, G, hd).permute(1, 2, 0, 3).reshape(n_kv, G * T, hd)  # [KV, G*T, hd]
    o = F.scaled_dot_product_attention(qg, k.transpose(0, 1), v.transpose(0, 1), attn_mask=mask.repeat(G, 1))
    return o.view(n_kv, G, T, hd).permute(2, 0, 1, 3).reshape(T, H * hd)


def attention_call(case: Case):
    from swiftspec_core.models.rope import apply_rope, rope_tables
    from swiftspec_core.models.transformer import grouped_attention
    from swiftspec_core.tree import tree_mask

    a, m, ctx = shard_args(case.model, case.tp), case.m, case.context
    H, KV, hd = a.n_heads, a.n_kv_heads, a.head_dim
    rows = ctx + m + 1  # the prefix, the tree, a padding row: one layer of the cache
    span = next(s for s in spans(rows) if s >= ctx + m)  # the span the forward's graph reads
    copies = input_copies(kv_bytes(a, ctx + m))
    caches = [(randn(rows, KV, hd), randn(rows, KV, hd)) for _ in range(copies)]
    qkv = randn(m, (H + 2 * KV) * hd)
    cos, sin = rope_tables(a, ctx + m, device="cuda")
    block = chain_block(ctx, m)
    if case.impl == "ours":
        tree_attention, out = ours("attention", "tree_attention"), torch.empty(m, H * hd, device="cuda",
                                                                             dtype=torch.bfloat16)
        return (lambda i: tree_attention(qkv, block, cos, sin, *caches[i % copies], span, H, KV, out=out)), \
            max(CALLS, copies)
    attend = sdpa_masked if case.impl == "sdpa" else grouped_attention
    mask = tree_mask(ctx, span, [list(range(ctx, ctx + j + 1)) for j in range(m)], "cuda")  # once per forward
    q, pos = qkv[:, :H * hd].view(m, H, hd), block[:, POSITION]

    def call(i):  # q's RoPE too: our kernel applies it inside
        k, v = caches[i % copies]
        return attend(apply_rope(q, cos[pos], sin[pos]), k[:span], v[:span], mask, KV)
    return call, max(CALLS, copies)


def rmsnorm_call(case: Case):
    from swiftspec_core.models.transformer import rms_norm

    a = shard_args(case.model, case.tp)
    h, m, w = randn(case.m, a.dim), randn(case.m, a.dim), randn(a.dim)
    if case.impl == "ours":
        add_rmsnorm, x, y = ours("norm", "add_rmsnorm"), torch.empty_like(h), torch.empty_like(h)
        return (lambda i: add_rmsnorm(h, m, w, a.norm_eps, x_out=x, y_out=y)), CALLS
    return (lambda i: rms_norm(h + m, w, a.norm_eps)), CALLS


def swiglu_call(case: Case):
    a = shard_args(case.model, case.tp)
    gate_up = randn(case.m, 2 * a.ffn_dim)
    if case.impl == "ours":
        swiglu, out = ours("norm", "swiglu"), torch.empty(case.m, a.ffn_dim, device="cuda", dtype=torch.bfloat16)
        return (lambda i: swiglu(gate_up, out=out)), CALLS

    def call(i):
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up
    return call, CALLS


LOCAL_OPS = {"gemm": gemm_call, "awq_gemm": awq_gemm_call, "attention": attention_call, "rmsnorm": rmsnorm_call, "swiglu": swiglu_call}


def group_call(case: Case, group, low_latency):
    """(call(i), calls) of an all-reduce or a GEMM + all-reduce on this rank."""
    a = shard_args(case.model, case.tp)
    if case.op == "allreduce":
        # Zeros: a sum of zeros in place stays zero over any number of replays (random values
        # would double each call and overflow); its time does not depend on the values.
        x = torch.zeros(case.m, a.dim, device="cuda", dtype=torch.bfloat16)
        reduce = low_latency() if case.impl == "ours" else group.all_reduce
        return (lambda i: reduce(x)), CALLS
    n, k, _ = gemm_shape(a, case.projection)
    if case.group == "awq_gemm_allreduce":  # bf16 x, as the TP forward feeds it
        awq_gemm_allreduce, ar = ours("awq_allreduce", "awq_gemm_allreduce"), low_latency()
        (ws, copies), x = awq_weights(n, k), randn(case.m, k)
        return (lambda i: awq_gemm_allreduce(x, ws[i % copies], ar)), max(CALLS, copies)
    copies = input_copies(BF16 * n * k)
    ws, x = [randn(n, k, scale=0.02) for _ in range(copies)], randn(case.m, k)
    if case.impl == "ours":
        # the GEMM and the LL all-reduce in one kernel; its inbox is made at the first (eager) call
        gemm_allreduce, ar = ours("gemm_epilogue", "fused_gemm_allreduce"), low_latency()
        return (lambda i: gemm_allreduce(x, ws[i % copies], ar)), max(CALLS, copies)
    return (lambda i: group.all_reduce(F.linear(x, ws[i % copies]))), max(CALLS, copies)
