"""Tree attention over the KV cache with RoPE inside (cuda/attention.cu), and the cache append
(cuda/append_kv.cu, or inside the attention: tree_attention's append=True, what the fused forward runs).

`tree_attention` serves every forward of the decoders: ar's width-1 step and a verification's
tree. It reads graphs.py's staged block: query t sits at position p = block[t, POSITION] and
attends the keys at positions 0..p, where position j < n = block[t, PREFIX] is cache row j and
position j >= n is cache row block[t, VISIBLE + j - n] (its ancestors in position order, then
itself). The kernel reduces keys in position order in chunks of CHUNK positions at fixed
boundaries and combines the chunks in order inside the kernel, so a query's bits depend only on
its q, p and the keys and values at positions 0..p (not on T, its index, other queries, where its
tree keys sit in the cache, or the span). The references below compute the same in fp32 torch.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch

from ..staged import POSITION, PREFIX, ROW, VISIBLE
from ..models.rope import apply_rope
from .build import CUDA_DIR, launch, ptr
from .gemm import _sm_count  # the cached SM count the GEMM plans with


def _define(name: str, source: str = "attention_item.cuh") -> int:
    """A #define of cuda/attention_item.cuh (or another source): the launch shape follows the
    source, written once there."""
    return int(re.search(rf"^#define {name} (\d+)", (CUDA_DIR / source).read_text(), re.MULTILINE)[1])


CHUNK = _define("CHUNK")  # positions one block reduces
NWARPS = _define("NWARPS")
TQMAX = _define("TQMAX")  # queries one block at most
MIN_BLOCKS = _define("MIN_BLOCKS", "attention.cu")  # blocks resident an SM (the kernel's __launch_bounds__)
KPAD = _define("KPAD")
HN = _define("HN")  # q heads a warp item computes together
PPAD = _define("PPAD")
APPEND_MAX = _define("APPEND_MAX", "attention_append.cuh")  # the most tokens the attention appends itself (more: append_kv first)
THREADS = NWARPS * 32
HEAD_DIMS = (64, 128)
COUNTERS = 1024  # merge counters per (device, stream): one a (kv head, query group)
_counters: dict[tuple[int, int], torch.Tensor] = {}


def _split(qkv: torch.Tensor, n_heads: int, n_kv: int, hd: int):
    """qkv [T, (H + 2 KV) * hd] -> q [T, H, hd], k [T, KV, hd], v [T, KV, hd] (views)."""
    q, k, v = qkv.split([n_heads * hd, n_kv * hd, n_kv * hd], dim=-1)
    T = qkv.shape[0]
    return q.view(T, n_heads, hd), k.view(T, n_kv, hd), v.view(T, n_kv, hd)


def _rope_fp32(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """x [T, heads, hd] -> fp32 with RoPE at `positions` (fp32 math, not rounded)."""
    return apply_rope(x.float(), cos[positions], sin[positions])


def append_kv_reference(qkv, positions, rows, cos, sin, k_cache, v_cache, n_heads: int, n_kv: int) -> None:
    """As append_kv, in torch on any device (rows outside [0, R) skipped, as the kernel does)."""
    hd = k_cache.shape[-1]
    valid = (rows >= 0) & (rows < k_cache.shape[0])
    qkv, positions, rows = qkv[valid], positions[valid], rows[valid]
    _, k, v = _split(qkv, n_heads, n_kv, hd)
    k_cache.index_copy_(0, rows, _rope_fp32(k, cos, sin, positions).to(k_cache.dtype))
    v_cache.index_copy_(0, rows, v)


def tree_attention_reference(qkv, block, cos, sin, k_cache, v_cache, span: int, n_heads: int, n_kv: int,
                             out=None, append: bool = False) -> torch.Tensor:
    """As tree_attention, in torch on any device: q with RoPE in fp32 rounded once to qkv's dtype
    (the tensor cores' operand), fp32 scores and softmax. The kernel also rounds each softmax
    weight to bf16 for the value product and each chunk's unnormalized output to bf16 before its
    merge (relative 2^-9 each); this reference does not."""
    if append:
        append_kv_reference(qkv, block[:, POSITION], block[:, ROW], cos, sin, k_cache, v_cache, n_heads, n_kv)
    T, hd = qkv.shape[0], k_cache.shape[-1]
    G, V = n_heads // n_kv, block.shape[1] - VISIBLE
    q, _, _ = _split(qkv, n_heads, n_kv, hd)
    p, n = block[:, POSITION], block[:, PREFIX]
    j = torch.arange(span, device=block.device)[None, :]  # [1, span]: positions
    tree = block[:, VISIBLE:].gather(1, (j - n[:, None]).clamp(0, V - 1))  # [T, span]
    rows = torch.where(j < n[:, None], j, tree)  # [T, span]: the cache row of each position
    keys, values = k_cache[rows].float(), v_cache[rows].float()  # [T, span, KV, hd]
    qg = _rope_fp32(q, cos, sin, p).to(qkv.dtype).float().view(T, n_kv, G, hd)  # rounded once, as the kernel
    scores = torch.einsum("tkgd,tjkd->tkgj", qg, keys) * hd ** -0.5  # [T, KV, G, span]
    scores = scores.masked_fill((j > p[:, None])[:, None, None, :], float("-inf"))
    o = torch.einsum("tkgj,tjkd->tkgd", torch.softmax(scores, dim=-1), values)  # [T, KV, G, hd]
    o = o.reshape(T, n_heads * hd).to(qkv.dtype)
    return o if out is None else out.copy_(o)


def _check(qkv, k_cache, v_cache, cos, sin, n_heads: int, n_kv: int) -> int:
    """The layout the kernels assume (16-byte loads); -> head_dim."""
    if k_cache.dim() != 3 or k_cache.shape != v_cache.shape:
        raise ValueError(f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)}: want [R, KV, hd] each")
    hd = k_cache.shape[-1]
    if hd not in HEAD_DIMS or n_heads % n_kv or k_cache.shape[1] != n_kv:
        raise ValueError(f"head_dim {hd} (want one of {HEAD_DIMS}), {n_heads} heads over {n_kv} kv heads, "
                         f"cache kv heads {k_cache.shape[1]}")
    if qkv.dim() != 2 or qkv.shape[1] != (n_heads + 2 * n_kv) * hd:
        raise ValueError(f"qkv {tuple(qkv.shape)}: want [T, {(n_heads + 2 * n_kv) * hd}]")
    for name, t in (("qkv", qkv), ("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype != torch.bfloat16 or not t.is_contiguous() or t.data_ptr() % 16:
            raise ValueError(f"{name} must be contiguous bf16 at a 16-byte aligned address")
    for t in (cos, sin):
        if t.dtype != torch.float32 or not t.is_contiguous() or t.dim() != 2 or t.shape[1] != hd:
            raise ValueError(f"rope tables: want contiguous fp32 [P, {hd}], got {t.dtype} {tuple(t.shape)}")
    return hd


def append_kv(qkv, positions, rows, cos, sin, k_cache, v_cache, n_heads: int, n_kv: int) -> None:
    """qkv: [T, (H + 2 KV) * hd] bf16 (q heads, then k heads, then v heads); positions, rows: [T]
    int64 on device; cos, sin: [P, hd] fp32 rope tables (rope.py, half-split rotate_half layout);
    k_cache, v_cache: [R, KV, hd] bf16 (one layer of the KVCache). Writes k (RoPE at its position,
    fp32 math, rounded once) and v to row rows[t] of the caches. Rows outside [0, R) are skipped."""
    hd, T = _check(qkv, k_cache, v_cache, cos, sin, n_heads, n_kv), qkv.shape[0]
    if any(t.dtype != torch.int64 or t.shape != (T,) for t in (positions, rows)):
        raise ValueError(f"positions, rows: want int64 [{T}] each")
    if T == 0:
        return  # a grid of no blocks is a launch error
    positions, rows = positions.contiguous(), rows.contiguous()  # e.g. columns of the staged block
    launch("append_kv", "append_kv", (T,), (THREADS,),
           (ptr(qkv), ptr(positions), ptr(rows), ptr(cos), ptr(sin), ptr(k_cache), ptr(v_cache),
            np.int32(n_heads), np.int32(n_kv), np.int32(hd), np.int32(k_cache.shape[0])))


def _counter_block(device: torch.device) -> torch.Tensor:
    """Per (device, stream): one int32 counter a (kv head, query group), zero between calls (the
    kernel's last block resets it). Per stream: forwards on two streams of one GPU never share one
    (graphs captured with torch.cuda.graph's default capture stream share theirs, so replays of
    two of them must not overlap)."""
    key = (device.index, torch.cuda.current_stream(device).cuda_stream)
    if key not in _counters:
        _counters[key] = torch.zeros(COUNTERS, dtype=torch.int32, device=device)
    return _counters[key]


def query_groups(T: int, blocks_per_group: int, resident: int) -> tuple[int, int]:
    """-> (TQ queries a block, groups): as few groups as fill the `resident` block slots (one wave)
    given `blocks_per_group` (chunks x kv heads) blocks a group, at most TQMAX queries a block. A
    block's warps take its query rows in turn: a row costs a warp far less than a wave of blocks
    costs the call (each block's chain of dependent global round trips), so waves are avoided first.
    Any split gives a query the same bits (rows never share a reduction)."""
    groups = max(1, min(T, resident // blocks_per_group))
    TQ = min(TQMAX, -(-T // groups))
    return TQ, -(-T // TQ)


def mergers(rows: int, hd: int, nchunks: int, blocks: int, resident: int) -> int:
    """How many of a (kv head, query group)'s last blocks merge its outputs: two where one merger's
    items (a block's query rows x hd / 8 outputs of 8) outnumber its THREADS, so that its threads
    would merge twice, one round trip after the other (the 8B from M = 9, the 70B at M = 8; a
    second merger took the 8B's attention at M = 12 13.0 -> 11.5 us and at M = 16 14.4 -> 13.0, and
    cost 0.5 us where one round was enough: NOTES v65, v124), and where the grid runs in one wave
    (a merger waits for the other blocks of its group, which must be running); else one."""
    return 2 if rows * (hd // 8) > THREADS and nchunks >= 2 and blocks <= resident else 1


def shared_bytes(hd: int, appended: int = 0) -> int:
    """Dynamic shared memory of tree_attention_hd{hd}: attention.cu's Smem<HD> (bf16 K and V tile
    rows of hd + KPAD, then each warp's HN q heads and HN rows of softmax weights), then the
    `appended` tokens' new K and V rows."""
    row = hd + KPAD
    return 2 * (2 * CHUNK * row + NWARPS * HN * (row + CHUNK + PPAD) + 2 * appended * row)


def tree_attention(qkv, block, cos, sin, k_cache, v_cache, span: int, n_heads: int, n_kv: int,
                   out=None, append: bool = False) -> torch.Tensor:
    """block: [T, 4 + V] int64 on device, graphs.py's staged block: columns TOKEN, POSITION, ROW,
    PREFIX, then V visible rows. Query t (its q heads from qkv, RoPE at p = block[t, POSITION]
    applied inside this kernel) attends the keys at positions 0..p: position j < n = block[t, PREFIX]
    is cache row j, position j >= n is cache row block[t, 4 + j - n] (its ancestors, then itself;
    contiguous in position). GQA: q head h uses kv head h // (H / KV). span: cache rows [0, span)
    are the most any query reads (fixed per captured graph, so the grid is fixed by it): p < span.
    -> out [T, H * hd] bf16: softmax(q.k * hd**-0.5) @ v, fp32 softmax.
    append: first append_kv(qkv, block's positions, block's rows, ...), inside the kernel where T <=
    APPEND_MAX (the attention sees the appended keys and values from shared memory; one block a
    row writes them to the cache), bitwise the same cache and output as the two calls. With it
    inside, the kernel reads the caches and the block before it waits for the kernel launched just
    before it (PDL), so that kernel must not write them (the forward's qkv GEMM writes only qkv)."""
    hd = _check(qkv, k_cache, v_cache, cos, sin, n_heads, n_kv)
    T, R = qkv.shape[0], k_cache.shape[0]
    if block.dtype != torch.int64 or block.dim() != 2 or block.shape[0] != T or block.shape[1] <= VISIBLE:
        raise ValueError(f"block: want int64 [{T}, {VISIBLE} + V], got {block.dtype} {tuple(block.shape)}")
    if not 0 < span <= R:
        raise ValueError(f"span {span} outside the cache's {R} rows")
    if out is None:
        out = torch.empty(T, n_heads * hd, dtype=qkv.dtype, device=qkv.device)
    elif out.shape != (T, n_heads * hd) or out.dtype != qkv.dtype or not out.is_contiguous() or out.data_ptr() % 16:
        raise ValueError(f"out: want contiguous {qkv.dtype} [{T}, {n_heads * hd}] at a 16-byte aligned address")
    if T == 0:
        return out
    block = block.contiguous()
    if append and T > APPEND_MAX:
        append_kv(qkv, block[:, POSITION], block[:, ROW], cos, sin, k_cache, v_cache, n_heads, n_kv)
        append = False
    kernel, grid, args, partials = tree_attention_launch(qkv, block, cos, sin, k_cache, v_cache, span, n_heads,
                                                         n_kv, out, append)
    launch("attention", kernel, grid, (THREADS,), args, shared_bytes(hd, T if append else 0))
    del partials  # freed after the launch, in stream order
    return out


def tree_attention_launch(qkv, block, cos, sin, k_cache, v_cache, span: int, n_heads: int, n_kv: int, out,
                          append: bool = False, merge_parts: int | None = None, by_position: bool | None = None):
    """tree_attention's launch on operands it has checked (block contiguous, T > 0, T <= APPEND_MAX
    with append), its partials allocated: -> (kernel name, grid, args, the partials the args point
    to: keep them until it is launched); the block is THREADS threads with shared_bytes(hd, T if
    append else 0). Who merges (cuda/attention_merge.cuh's merge_role): with one merger in one wave
    the last chunk's block (by_position), else the last merge_parts blocks to draw a ticket. Tests
    force merge_parts and by_position (the same bits either way).
    paper_figures/attention_trace.py launches an instrumented copy of the kernel with them."""
    T, R, hd = qkv.shape[0], k_cache.shape[0], k_cache.shape[-1]
    # Grid: chunks x kv heads x query groups of TQ queries.
    G = n_heads // n_kv
    nchunks, Q = -(-span // CHUNK), T * G
    resident = MIN_BLOCKS * _sm_count(qkv.device.index)
    TQ, groups = query_groups(T, nchunks * n_kv, resident)
    blocks = nchunks * n_kv * groups
    if merge_parts is None:  # the rule; tests force 1 or 2 (the same bits)
        merge_parts = mergers(TQ * G, hd, nchunks, blocks, resident)
    one_merger_one_wave = merge_parts == 1 and blocks <= resident
    if by_position and not one_merger_one_wave:
        raise ValueError(f"by position: {merge_parts} mergers, {blocks} blocks for {resident} resident; the "
                         "merger would wait on blocks that cannot run (or count on a second merger's ticket)")
    by_position = one_merger_one_wave if by_position is None else by_position
    if n_kv * groups > COUNTERS:
        raise ValueError(f"{n_kv} kv heads x {groups} query groups: the merge counters hold {COUNTERS}")
    # Partials of every (kv head, chunk, query row): [running max, sum] and the unnormalized output (bf16).
    part_ml = torch.empty(n_kv * nchunks * Q * 2, dtype=torch.float32, device=qkv.device)
    part_acc = torch.empty(n_kv * nchunks * Q * hd, dtype=torch.bfloat16, device=qkv.device)
    args = (ptr(qkv), ptr(block), ptr(cos), ptr(sin), ptr(k_cache), ptr(v_cache), ptr(part_ml), ptr(part_acc),
            ptr(_counter_block(qkv.device)), ptr(out), np.int32(T), np.int32(n_heads), np.int32(n_kv),
            np.int32(block.shape[1] - VISIBLE), np.int32(span), np.int32(R), np.int32(TQ), np.int32(append),
            np.int32(merge_parts), np.int32(by_position), np.float32(hd ** -0.5 * math.log2(math.e)))
    return f"tree_attention_hd{hd}", (nchunks, n_kv, groups), args, (part_ml, part_acc)
