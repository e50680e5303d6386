"""What cuda/persistent.cu (a persistent kernel for a forward's layers at Llama-3.2-1B's shapes; its
GEMM phases also at Llama-3-8B's, for the probe) reads, laid out on the host: its source with the ring's defines, its shared memory, the weights as
page images (one bulk copy a page), activations in slices (one a page's k), and a draft step's
tree from the engine's staged block; and its launch (compiled, launch_args: the parameters in the
kernel's order, for the engine's forward and the probe alike). paper_figures/persistent_mlp.py
measures it; tests/test_persistent_mlp.py checks these on the CPU."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .. import staged
from . import build, tensor_map
from .attention import shared_bytes as attention_shared_bytes


@dataclass(frozen=True)
class Shape:
    """A model's GEMM shapes as the kernel takes them (persistent_shapes.cuh's HID, FFN, QKV)."""

    hidden: int
    ffn: int
    qkv: int  # q, k and v rows together


LLAMA_1B = Shape(2048, 8192, 3072)  # Llama-3.2-1B (qkv: 32 q heads, 8 k and 8 v heads of 64): the engine's
LLAMA_8B = Shape(4096, 14336, 6144)  # Llama-3-8B (32 q heads, 8 kv heads of 128): the GEMM phases only
SHAPES = {"llama-3.2-1b": LLAMA_1B, "llama-3-8b": LLAMA_8B}
HIDDEN, FFN, QKV = LLAMA_1B.hidden, LLAMA_1B.ffn, LLAMA_1B.qkv
Q_HEADS, KV_HEADS, HEAD_DIM, CHUNK = 32, 8, 64, 64  # cuda/persistent_attention.cuh's
TARGET_HEAD_DIM = 128  # cuda/persistent_target.cuh's T_HD (its heads: Llama-3-8B's)
# A token's tree mask in 32-bit words: tree rows prefix .. prefix + 383, the drafter's 4 tree_bs
# tree_w rows at a run's defaults (12, 8: decoders.base.draft_tree_rows)
MASK_WORDS = 12
WARPS, Y_SLOTS = 8, 3  # compute warps; Y_SLOTS: down's x (y) slots
THREADS = (WARPS + 1) * 32  # and the producer warp
KERNEL = "persistent_layers"  # cuda/persistent.cu's
SHARED_MAX = 227 * 1024  # an H100 / H200 block's shared memory at most
STATIC_RESERVE = 1280  # the kernel's static shared memory (mbarriers, the tree's masks, positions and rows):
# ptxas counts 1152 bytes at M = 16, where a 1024x4 ring leaves exactly this much


def qrows(m: int) -> int:
    """persistent_attention.cuh's QROWS: a kv head's q rows (m tokens x 4 q heads) in tiles of 16."""
    return -(-m * (Q_HEADS // KV_HEADS) // 16) * 16


def shared_bytes(page_k: int, depth: int, max_m: int, shape: Shape = LLAMA_1B, target: bool = False) -> int:
    """cuda/persistent.cu's SMEM_BYTES: the ring, then phase A's x slices, two items' partials and g,
    or phase B's Y_SLOTS y slots (a slice: max_m rows of page_k + 8 in whole 128-byte lines), or
    phase S's q copy, or in the target build phase T's item (target_bytes)."""
    row, tiles = page_k * 2 + 16, (max_m + 7) // 8  # tiles: n8 tiles of x rows
    slice_ = -(-max_m * row // 128) * 128  # whole 128-byte lines
    region_a = shape.hidden // page_k * slice_ + 2 * WARPS * tiles * 32 * 16 + shape.hidden * 2  # x, partials, g
    region_s = KV_HEADS * qrows(max_m) * (HEAD_DIM + 8) * 2  # q's copy, every kv head's
    return depth * 16 * row + max(region_a, Y_SLOTS * slice_, region_s, target_bytes(max_m) if target else 0)


def target_bytes(max_m: int) -> int:
    """The target build's TARGET_BYTES: an attention item's shared memory (attention.cu's, its
    max_m appended rows too) at head_dim TARGET_HEAD_DIM."""
    return attention_shared_bytes(TARGET_HEAD_DIM, max_m)


def kernel_source(page_k: int, depth: int, max_m: int, shape: Shape = LLAMA_1B, target: bool = False) -> str:
    """cuda/persistent.cu with its ring's and shapes' defines first, its headers inlined (build.source).
    target: the target build (persistent_target.cuh's attention, by position; x0, attn and out in
    plain rows [layers, M, hidden], else in slices: activation_slices)."""
    defines = dict(PAGE_K=page_k, DEPTH=depth, MAX_M=max_m)
    if shape != LLAMA_1B:  # persistent_shapes.cuh's defaults are the 1B's
        defines |= dict(HID=shape.hidden, FFN=shape.ffn, QKV=shape.qkv)
    if target:
        defines |= dict(PLAIN_IO=1, TARGET=1, TARGET_BYTES=target_bytes(max_m))
    return "".join(f"#define {k} {v}\n" for k, v in defines.items()) + build.source("persistent")


def compiled(page_k: int, depth: int, max_m: int, shape: Shape = LLAMA_1B, target: bool = False):
    """The kernel built for a page_k x depth ring, max_m rows and `shape` (kernel_source), its dynamic
    shared memory raised to what it takes. -> (function, dynamic shared bytes)."""
    shared = shared_bytes(page_k, depth, max_m, shape, target)
    fn = build.compile_source(kernel_source(page_k, depth, max_m, shape, target)).get_function(KERNEL)
    fn.max_dynamic_shared_size_bytes = shared
    return fn, shared


def grid_blocks(device, shape: Shape = LLAMA_1B, page_k: int = 1024) -> int:
    """The kernel's grid, a block an SM; ValueError where o_proj's and down's hidden / 16 tiles
    outnumber the SMs and a block cannot take several (their sums would land on x's first slice,
    which its next tile reads: persistent_shapes.cuh's TILE_PART_OFFSET needs hidden / page_k x
    slices >= Y_SLOTS)."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    if sms < shape.hidden // 16 and shape.hidden // page_k < Y_SLOTS:
        raise ValueError(f"the persistent kernel gives o_proj's and down's {shape.hidden // 16} tiles a block each "
                         f"at {page_k}-wide pages: it needs as many SMs, this GPU has {sms}")
    return sms


def launch_args(*, x0, gate_up, down, y, out, counters, layers: int, m: int, deep: bool, mlp_norm=None,
                eps: float = 0.0, attn=None, o=None, mid=None, qkv_w=None, qkv_norm=None, qkv=None, k_cache=None,
                v_cache=None, cos=None, sin=None, qbuf=None, part_ml=None, part_o=None, block=None,
                span: int = 0, cache_rows: int = 0, stamps=None, maps=None, head_dim: int = HEAD_DIM) -> tuple:
    """cuda/persistent.cu's parameters in its order: tensors as device pointers (None: a null
    pointer, the phase absent), the attention's with its k_cache (span: the cache rows it reads,
    in whole chunks too; the scale 1/sqrt(head_dim) in log2 units, else 0), `maps` the caches'
    tensor maps (none without the draft's attention)."""
    def p(t) -> np.uint64:
        return np.uint64(0) if t is None else build.ptr(t)

    i32 = np.int32
    scale = head_dim ** -0.5 * math.log2(math.e) if k_cache is not None else 0.0
    return (p(x0), p(gate_up), p(down), p(y), p(out), p(counters), i32(layers), i32(m), i32(int(deep)),
            p(mlp_norm), np.float32(eps), p(attn), p(o), p(mid), p(qkv_w), p(qkv_norm), p(qkv), p(k_cache),
            p(v_cache), p(cos), p(sin), p(qbuf), p(part_ml), p(part_o), p(block),
            i32(0 if block is None else block.shape[1]), i32(-(-span // CHUNK)), i32(span), i32(cache_rows), np.float32(scale),
            p(stamps), *(maps or (tensor_map.TensorMap(), tensor_map.TensorMap())))


def launch(fn, blocks: int, shared: int, args: tuple) -> None:
    """One launch of the compiled kernel on the current stream: a block an SM, no PDL (its grid
    barriers want every block resident from the start)."""
    build.launch_ex(fn.kernel.ptr, (blocks,), (THREADS,), args, shared, torch.cuda.current_stream().cuda_stream,
                    False)


def slice_rows(m: int) -> int:
    """Rows a slice holds in global memory: M rounded up to 8 (8 rows of page_k + 8 bf16 are a
    multiple of 128 bytes, so every slice's bulk copy starts 128-byte aligned; NOTES v178)."""
    return -(-m // 8) * 8


def activation_slices(*lead: int, k: int, m: int, page_k: int, device) -> torch.Tensor:
    """Zeros as the kernel keeps an activation of k columns for m rows (sliced()'s layout):
    [..., k / page_k, slice_rows(m), page_k + 8] bf16."""
    return torch.zeros(*lead, k // page_k, slice_rows(m), page_k + 8, dtype=torch.bfloat16, device=device)


def attention_scratch(max_m: int, chunks: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The attention phases' scratch as persistent_attention.cuh lays it out, for max_m tokens and
    spans of up to `chunks` chunks: qbuf [KV, qrows, HEAD_DIM + 8] bf16 (q with RoPE, phase Q to S),
    part_ml [KV, chunks, qrows, 2] and part_o [KV, chunks, qrows, HEAD_DIM] fp32 (each (kv head,
    chunk)'s partial maxima and sums, and outputs, phase S to R)."""
    rows = qrows(max_m)
    return (torch.zeros(KV_HEADS, rows, HEAD_DIM + 8, dtype=torch.bfloat16, device=device),
            torch.zeros(KV_HEADS, chunks, rows, 2, device=device),
            torch.zeros(KV_HEADS, chunks, rows, HEAD_DIM, device=device))


def sliced(x: torch.Tensor, page_k: int) -> torch.Tensor:
    """[..., M, K] as the kernel keeps x0, y and out: [..., K / page_k, slice_rows(M), page_k + 8]
    (padding zero)."""
    *lead, m, k = x.shape
    x = x.reshape(*lead, m, k // page_k, page_k).transpose(-2, -3)
    return torch.nn.functional.pad(x, (0, 8, 0, slice_rows(m) - m)).contiguous()


def unsliced(x: torch.Tensor, m: int) -> torch.Tensor:
    """sliced()'s inverse: [..., S, rows, page_k + 8] -> [..., m, S page_k] (its first m rows)."""
    *lead, slices, _, row = x.shape
    return x[..., :m, :row - 8].transpose(-2, -3).reshape(*lead, m, slices * (row - 8))


def qkv_rope_rows(device=None) -> torch.Tensor:
    """[192, 16]: qkv's rows in persistent_attention.cuh's tiles (qkv_tile_row): tile c < 160 holds
    dims d0 .. d0 + 7 and d0 + 32 .. of head c / 4 (q heads, then k heads; d0 = 8 (c % 4)), the
    RoPE pairs; tiles 160.. hold 16 rows of v each."""
    c = torch.arange(QKV // 16, device=device)[:, None]
    r = torch.arange(16, device=device)[None, :]
    rope = HEAD_DIM * (c // 4) + 8 * (c % 4) + torch.where(r < 8, r, r + 24)
    return torch.where(c < 4 * (Q_HEADS + KV_HEADS), rope, HEAD_DIM * (Q_HEADS + KV_HEADS) + 16 * (c - 160) + r)


def paged(w: torch.Tensor, layout: str, page_k: int) -> torch.Tensor:
    """w [L, N, K] as the kernel's page images: [L, N / 16, K / page_k, 16, page_k + 8] (each page's
    16 rows padded by 16 bytes, as in shared memory). Tile i holds rows 16 i .. 16 i + 15 of w
    (layout "down": down, o, qkv), or for gate_up (layout "gate_up") gate rows 8 i .. 8 i + 7, then
    up rows 8 i .. of the second half, or for qkv with the attention (layout "qkv_rope")
    qkv_rope_rows()'s."""
    layers, n, k = w.shape
    if layout == "gate_up":  # [L, 2, F / 8, 8, K] -> [L, F / 8, 2 * 8, K]: gate's 8 rows, then up's
        w = w.view(layers, 2, n // 16, 8, k).transpose(1, 2).reshape(layers, n // 16, 16, k)
    elif layout == "qkv_rope":
        w = w[:, qkv_rope_rows(w.device).flatten()].view(layers, n // 16, 16, k)
    else:
        w = w.view(layers, n // 16, 16, k)
    w = w.view(layers, n // 16, 16, k // page_k, page_k).transpose(2, 3)  # [L, items, pages, 16, page_k]
    return torch.nn.functional.pad(w, (0, 8)).contiguous()


def kernel_inputs(block: torch.Tensor, words: int = MASK_WORDS) -> tuple[torch.Tensor, ...]:
    """The torch twin of cuda/persistent.cu's prologue, which reads the staged block [T, 4 + V]
    (staged.py) itself (these ops were ~40 us of small launches a draft step: NOTES v188): each
    token's position and cache row (int32 [T]), its tree mask [T, words] int32 (bits as uint32): bit
    j set when one of its visible rows is its PREFIX + j (rows past 32 words are dropped: the caller
    keeps trees smaller), and tree_at int32 [2]: token 0's PREFIX (the step's shared prefix) and the
    lowest row the step writes (padding tokens write the scratch row, the cache's last)."""
    t = block.shape[0]
    j = block[:, staged.VISIBLE:] - block[:, staged.PREFIX:staged.PREFIX + 1]  # [T, V] rows past the prefix
    inside = (j >= 0) & (j < 32 * words)
    seen = torch.zeros(t, 32 * words, dtype=torch.int32, device=block.device)  # [T, 32 words] (int32: CUDA's atomic max)
    seen.scatter_reduce_(1, torch.where(inside, j, 0), inside.to(torch.int32), reduce="amax")  # repeats: one bit
    bits = torch.arange(32, device=block.device, dtype=torch.int64)
    packed = (seen.view(t, words, 32).to(torch.int64) << bits).sum(-1)  # [T, words] in [0, 2^32)
    masks = torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)
    tree_at = torch.stack([block[0, staged.PREFIX], block[:, staged.ROW].min()]).to(torch.int32)
    return block[:, staged.POSITION].to(torch.int32), block[:, staged.ROW].to(torch.int32), masks, tree_at
