"""What paper_figures/persistent_mlp.cu reads, laid out on the host: its source with the ring's
defines, its shared memory, the weights as page images (one bulk copy a page) and activations in
slices (one a page's k). persistent_mlp.py runs the probe; tests/test_persistent_mlp.py checks
these on the CPU."""
from __future__ import annotations

from pathlib import Path

import torch

from swiftspec_core.kernels import build

HIDDEN, FFN, QKV = 2048, 8192, 3072  # Llama-3.2-1B (qkv: 32 q heads, 8 k and 8 v heads of 64)
Q_HEADS, KV_HEADS, HEAD_DIM, CHUNK = 32, 8, 64, 64  # persistent_attention.cuh's
MASK_WORDS = 8  # and its tree masks' words a token: tree rows prefix .. prefix + 255
WARPS, Y_SLOTS = 8, 3  # compute warps; Y_SLOTS: down's x (y) slots
THREADS = (WARPS + 1) * 32  # and the producer warp
SOURCE = Path(__file__).with_name("persistent_mlp.cu")
ATTENTION_SOURCE = Path(__file__).with_name("persistent_attention.cuh")
RING_SOURCE = Path(__file__).with_name("persistent_ring.cuh")
PAGES_SOURCE = Path(__file__).with_name("persistent_pages.cuh")
SHAPES_SOURCE = Path(__file__).with_name("persistent_shapes.cuh")
SHARED_MAX = 227 * 1024  # an H100 / H200 block's shared memory at most
STATIC_RESERVE = 1024  # the kernel's static shared memory: mbarriers, the tree's masks, positions and rows


def qrows(m: int) -> int:
    """persistent_attention.cuh's QROWS: a kv head's q rows (m tokens x 4 q heads) in tiles of 16."""
    return -(-m * (Q_HEADS // KV_HEADS) // 16) * 16


def shared_bytes(page_k: int, depth: int, max_m: int) -> int:
    """persistent_mlp.cu's SMEM_BYTES: the ring, then phase A's x slices, two items' partials and g,
    or phase B's Y_SLOTS y slots (a slice: max_m rows of page_k + 8 in whole 128-byte lines), or
    phase S's q copy."""
    row, tiles = page_k * 2 + 16, (max_m + 7) // 8  # tiles: n8 tiles of x rows
    slice_ = -(-max_m * row // 128) * 128  # whole 128-byte lines
    region_a = HIDDEN // page_k * slice_ + 2 * WARPS * tiles * 32 * 16 + HIDDEN * 2  # x, partials, g
    region_s = KV_HEADS * qrows(max_m) * (HEAD_DIM + 8) * 2  # q's copy, every kv head's
    return depth * 16 * row + max(region_a, Y_SLOTS * slice_, region_s)


def kernel_source(page_k: int, depth: int, max_m: int) -> str:
    """persistent_mlp.cu with its ring's defines first and persistent_shapes.cuh's,
    persistent_ring.cuh's, persistent_attention.cuh's and persistent_pages.cuh's text in place of
    their includes (build.inline_includes inlines cuda/'s headers only)."""
    defines = f"#define PAGE_K {page_k}\n#define DEPTH {depth}\n#define MAX_M {max_m}\n"
    code = SOURCE.read_text()
    for header in (SHAPES_SOURCE, RING_SOURCE, ATTENTION_SOURCE, PAGES_SOURCE):
        code = code.replace(f'#include "{header.name}"', header.read_text())
    return build.inline_includes(defines + code)


def slice_rows(m: int) -> int:
    """Rows a slice holds in global memory: M rounded up to 8 (8 rows of page_k + 8 bf16 are a
    multiple of 128 bytes, so every slice's bulk copy starts 128-byte aligned; NOTES v178)."""
    return -(-m // 8) * 8


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
