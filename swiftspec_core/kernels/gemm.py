"""Row-invariant GEMM for M <= 16 rows (cuda/gemm.cu): out = x @ w.T + bias, bf16 in and out.

At M <= 16 a layer's GEMM is bound by reading its weights once; the kernel computes every call
as 16 rows on the tensor cores (rows M..15 zeros, never loaded), and its launch shape (columns per
warp, warps splitting K) comes from (N, K) alone, so a row's bits do not depend on M, on the row's
index, or on the other rows: the property issue 10 asks for, checked bitwise by the GPU tests.

Two options fold the ops around a projection into it (forward.py uses them on one GPU in bf16
where forward.norms_in_gemms says so):
`norm=(weight, eps)` computes rmsnorm(x) @ w.T as r * ((x * weight) @ w.T), each row's r from the
sums of squares of the x the kernel loads anyway (cuda/gemm_tile.cuh), and `residual=h` adds the
residual stream to the output (h + x @ w.T, torch's bf16 add; out may be h).
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from swiftspec_core.kernels.build import launch, ptr

MAX_ROWS = 16
# UNROLL[NT]: the 32-wide K chunks a warp loads at once when it computes NT 8-column tiles, as
# gemm_nt{NT} is instantiated at the bottom of cuda/gemm.cu.
UNROLL = {1: 4, 2: 4, 4: 2}
MAX_SPLITS = 16  # warps splitting K in one block: the kernels' __launch_bounds__(512)
NORM_MAX_SPLITS = 8  # the same with norm: __launch_bounds__(256), room for its registers
WARPS_PER_SM = 16  # the occupancy the split aims at (each lane keeps NT * UNROLL 16-byte loads in flight)


def gemm_reference(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None,
                   out: torch.Tensor | None = None, norm: tuple[torch.Tensor, float] | None = None,
                   residual: torch.Tensor | None = None, row_scale: torch.Tensor | None = None,
                   dtype: torch.dtype | None = None) -> torch.Tensor:
    """x [M, K] @ w [N, K].T (+ bias [N]) accumulated in fp32 and rounded once to `dtype` (x's by default); any
    device (fp32 matmul: no TF32, whatever torch's global setting). norm = (g [K], eps): x is
    first rmsnorm(x; g, eps) as the kernel computes it, r * (bf16(x * g) @ w.T) with r = 1 /
    sqrt(mean(x^2) + eps) in fp32 before the bias; row_scale [M] fp32: that r given (x is already
    bf16(h * g): awq_norms.py). residual [M, N]: that output rounded, plus the residual, rounded
    once (torch's bf16 add). Written to out when given (it may be residual)."""
    a, r = x.float(), 1.0 if row_scale is None else row_scale.float()[:, None]
    if norm is not None:
        g, eps = norm
        r = torch.rsqrt(a.square().mean(-1, keepdim=True) + eps)  # [M, 1]
        a = (a * g.float()).to(x.dtype).float()
    with _no_tf32():
        y = (a @ w.float().T) * r
    if bias is not None:
        y = y + bias.float()
    y = y.to(dtype or x.dtype)
    y = y if residual is None else residual + y
    return y if out is None else out.copy_(y)


class _no_tf32:
    def __enter__(self):
        self.saved = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32 = self.saved


@functools.cache
def plan(n: int, k: int, sms: int) -> tuple[int, int]:
    """(NT, S) for an [n, k] weight on a GPU of `sms` SMs: NT 8-column tiles per warp, S warps
    splitting K in a block of one column tile. Decided by (n, k) and the GPU, never by M: that is
    what keeps a row's reduction order, so its bits, the same at every M."""
    # The widest tile that still gives about one block per SM (a wider tile reads x fewer times).
    nt = next((t for t in (4, 2) if -(-n // (8 * t)) * 10 >= sms * 9), 1)
    return nt, k_splits(n, k, nt, sms)


def k_splits(n: int, k: int, nt: int, sms: int) -> int:
    """S, the warps splitting K in a block, for tiles of NT: more warps until about WARPS_PER_SM
    warps per SM, keeping at least one full group of loads (UNROLL chunks) per warp; two where the
    blocks alone, at one warp each, outnumber those warps (several waves whatever S is)."""
    blocks, chunks, splits = -(-n // (8 * nt)), -(-k // 32), 1
    if blocks > WARPS_PER_SM * sms and chunks >= 2 * UNROLL[nt]:
        # A vocabulary's lm_head (thousands of blocks): two warps halve a tile's time, which shortens
        # the last wave's tail. Timed alone at M = 8 (NOTES v68): 8B 280 -> 262 us, 1B 141 -> 133.
        return 2
    while (splits * 2 <= MAX_SPLITS and blocks * splits * 2 <= WARPS_PER_SM * sms
           and chunks >= splits * 2 * UNROLL[nt]):
        splits *= 2
    return splits


def check_operands(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None,
                   out: torch.Tensor | None, op: str = "gemm", out_cols: int | None = None,
                   norm: tuple[torch.Tensor, float] | None = None, residual: torch.Tensor | None = None) -> None:
    """ValueError unless the operands are what the kernel reads and writes (shapes and dtypes first,
    then alignment, then device). op: the entry named in the messages; out_cols: out's columns
    where they are not w's N (a fused epilogue's); norm's weight is [K], residual is out's shape."""
    if x.dim() != 2 or w.dim() != 2:
        raise ValueError(f"{op}: x and w must be 2-D, got {tuple(x.shape)} and {tuple(w.shape)}")
    (m, k), (n, k_w) = x.shape, w.shape
    if not 1 <= m <= MAX_ROWS:
        raise ValueError(f"{op}: x has {m} rows; the kernel takes 1..{MAX_ROWS}")
    if k != k_w or k == 0 or n == 0:
        raise ValueError(f"{op}: x {tuple(x.shape)} and w {tuple(w.shape)} (w is [N, K]) do not match")
    if k % 8:
        raise ValueError(f"{op}: K = {k} is not a multiple of 8 (16-byte loads)")
    tensors, aligned = {"x": x, "w": w}, ("x", "w")
    if norm is not None:
        g, eps = norm
        if g.dim() != 1 or g.shape[0] != k:
            raise ValueError(f"{op}: the norm weight must be [{k}], got {tuple(g.shape)}")
        if not eps > 0:
            raise ValueError(f"{op}: the norm's eps must be positive, got {eps}")
        tensors["norm weight"], aligned = g, aligned + ("norm weight",)
    if residual is not None:
        cols = n if out_cols is None else out_cols
        if tuple(residual.shape) != (m, cols):
            raise ValueError(f"{op}: residual must be [{m}, {cols}], got {tuple(residual.shape)}")
        tensors["residual"] = residual
    check_common(op, x, m, n, k, tensors, dict.fromkeys(tensors, torch.bfloat16), bias, out,
                 aligned=aligned, margin=32, out_cols=out_cols)


def check_common(op: str, x: torch.Tensor, m: int, n: int, k: int, tensors: dict, dtypes: dict,
                 bias: torch.Tensor | None, out: torch.Tensor | None, aligned: tuple[str, ...], margin: int,
                 out_cols: int | None = None, out_dtype: torch.dtype = torch.bfloat16) -> None:
    """The checks every GEMM entry shares once its own shapes are checked: bias [N] in bf16 and out
    [M, N] (or [M, out_cols]) in out_dtype, each tensor's dtype and contiguity, 16-byte alignment of
    `aligned`, x's CUDA device for all, and sizes that leave `margin` below the kernel's int32 indices."""
    if bias is not None:
        if tuple(bias.shape) != (n,):
            raise ValueError(f"{op}: bias must be [{n}], got {tuple(bias.shape)}")
        tensors["bias"], dtypes["bias"] = bias, torch.bfloat16
    if out is not None:
        cols = n if out_cols is None else out_cols
        if tuple(out.shape) != (m, cols):
            raise ValueError(f"{op}: out must be [{m}, {cols}], got {tuple(out.shape)}")
        tensors["out"], dtypes["out"] = out, out_dtype
    for name, t in tensors.items():
        if t.dtype != dtypes[name]:
            raise ValueError(f"{op}: {name} must be {str(dtypes[name]).removeprefix('torch.')}, got {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(f"{op}: {name} must be contiguous")
    for name in aligned:
        if tensors[name].data_ptr() % 16:
            raise ValueError(f"{op}: {name} is not 16-byte aligned (the kernel loads 16 bytes at a time)")
    for name, t in tensors.items():
        if t.device.type != "cuda" or t.device != x.device:
            raise ValueError(f"{op}: {name} is on {t.device}; every operand must be on x's CUDA device")
    if max(n, k) >= 2**31 - margin:
        raise ValueError(f"{op}: [{n}, {k}] does not fit the kernel's int32 sizes")


def gemm(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None,
         out: torch.Tensor | None = None, norm: tuple[torch.Tensor, float] | None = None,
         residual: torch.Tensor | None = None) -> torch.Tensor:
    """x: [M, K] bf16 contiguous, 1 <= M <= 16; w: [N, K] bf16 contiguous (nn.Linear layout);
    bias: [N] bf16 or None; out: [M, N] bf16 (written) or None (allocated). -> out = x @ w.T + bias,
    fp32 accumulation, rounded once to bf16. norm = (g [K] bf16, eps): rmsnorm(x; g, eps) in place
    of x (gemm_reference says how); residual: [M, N] bf16 added to that output (out may be it)."""
    check_operands(x, w, bias, out, norm=norm, residual=residual)
    (m, k), n = x.shape, w.shape[0]
    if out is None:
        out = torch.empty(m, n, dtype=x.dtype, device=x.device)
    launch_planned(x, w, bias, out, *planned(n, k, x.device, norm), norm, residual)
    return out


def planned(n: int, k: int, device: torch.device, norm: tuple[torch.Tensor, float] | None) -> tuple[int, int]:
    """(NT, S) of plan() for an [n, k] weight on `device`; with the norm inside (gemm, gemm_swiglu)
    S is at most NORM_MAX_SPLITS (its kernels' block bound)."""
    nt, splits = plan(n, k, _sm_count(device.index))
    return nt, min(splits, NORM_MAX_SPLITS) if norm else splits


def norm_args(norm: tuple[torch.Tensor, float] | None) -> tuple[np.uint64, np.float32]:
    """The norm weights' pointer and eps as the GEMM kernels take them (null and 0 without a norm)."""
    return (ptr(norm[0]), np.float32(norm[1])) if norm else (np.uint64(0), np.float32(0.0))


def launch_planned(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor,
                   nt: int, splits: int, norm: tuple[torch.Tensor, float] | None = None,
                   residual: torch.Tensor | None = None) -> None:
    """gemm's launch at a given plan (NT, S), on operands gemm has checked (paper_figures'
    plan_sweep.py times other plans through it)."""
    (m, k), n = x.shape, w.shape[0]
    null, (g, eps) = np.uint64(0), norm_args(norm)
    with torch.cuda.device(x.device):
        launch("gemm", f"gemm_norm_nt{nt}" if norm else f"gemm_nt{nt}", (-(-n // (8 * nt)),), (32 * splits,),
               (ptr(x), ptr(w), null if bias is None else ptr(bias), g, null if residual is None else ptr(residual),
                ptr(out), np.int32(m), np.int32(n), np.int32(k), eps),
               shared_mem=combine_bytes(splits, nt, k if norm else 0))


def combine_bytes(splits: int, tiles: int, norm_k: int = 0) -> int:
    """Shared memory of gemm_tile.cuh's combine for S warps of `tiles` 8-column tiles each (the GEMM
    and its fused epilogues): [S][tiles * 4][32] floats; with the norm over K = norm_k, then each
    warp's 16 rows' sums of squares and the norm weights [K] bf16."""
    return splits * tiles * 4 * 32 * 4 + (splits * 16 * 4 + norm_k * 2 if norm_k else 0)


@functools.cache
def _sm_count(device: int) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count
