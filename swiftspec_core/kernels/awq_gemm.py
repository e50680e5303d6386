"""Row-invariant GEMM on 4-bit AWQ weights for M <= 16 rows (cuda/awq_gemm.cu): out = x @ W.T + bias,
W dequantized inside the kernel from AutoAWQ's tensors in the tiled layout (models/awq.py: tile(),
which the engine converts its AWQ layers to once, Transformer.use_kernels), bf16 x and out.

As gemm.py: every call runs its rows on the tensor cores in the same instructions (16 rows, the
second 8 only where M > 8), and the launch shape (warps and blocks splitting K) comes from (N, K) and
the GPU alone, so a row's bits do not depend on M, on its index or on the other rows. The kernel
reads N * K / 2 bytes of codes where the bf16 GEMM reads 2 N K: at these M both are bound by reading
the weights, so plan() aims at many bytes in flight on every SM, in one wave.

Numerics: the kernel multiplies x by the exact integers q - zero, sums a 32-wide chunk in fp32 and
scales the chunk sum by the fp32 scale, so it never rounds a weight; awq_gemm_reference rounds the
weights (q - zero) * scale to x's dtype first, as the torch path computes. They differ by that
rounding (relative 2^-9 per weight, averaging out over K) and by accumulation order.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from swiftspec_core.kernels.build import launch, ptr
from swiftspec_core.kernels.gemm import _sm_count, check_common, gemm_reference
from swiftspec_core.models.awq import TILE_COLUMNS, AWQWeight, TiledAWQWeight, dequantize

MAX_ROWS = 16
COLUMNS_PER_BLOCK = TILE_COLUMNS  # a tile, one warp's mma tiles
STAGES = 10  # 32-wide K chunks in each warp's shared-memory ring (AWQ_STAGES): 9 KB of codes in flight a warp
STAGE_BYTES = 1120  # one chunk's codes, padded (AWQ_STAGE_BYTES); x, scales and zeros go through L1 instead
SPLITS = (1, 2, 4, 8, 16)  # warps splitting K in one block: __launch_bounds__(512)
CLUSTERS = (1, 2, 4, 8)  # blocks splitting K further on the same columns: awq_gemm_c{C}
WARPS_PER_SM = 16  # 128 registers a lane
SHARED_PER_SM = 228 * 1024  # H100/H200, of which 1 KB a block is the system's
# Warps per SM that plan() aims at. ncu (70B gate_up, ~11 warps an SM): no eligible warp 46% of
# cycles with DRAM 42% busy, so latency rather than bandwidth: the kernel wants warps; and 12 x 9 KB
# of codes in flight is over twice the ~50 KB an SM needs to stream at full bandwidth.
WARPS_IN_FLIGHT = 12
MIN_CHUNKS_PER_WARP = 2


def awq_gemm_reference(x: torch.Tensor, w: AWQWeight | TiledAWQWeight,
                       bias: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] @ dequantize(w, x.dtype).T (+ bias), fp32 accumulation, rounded once to x's dtype;
    either layout, any device."""
    return gemm_reference(x, dequantize(w, x.dtype), bias)


@functools.cache
def plan(n: int, k: int, sms: int) -> tuple[int, int]:
    """(S, C) for an [n, k] weight on a GPU of `sms` SMs: clusters of C blocks of S warps on each 64
    output columns, the C S warps splitting K. Decided by (n, k) and the GPU, never by M: that keeps
    a row's reduction order, so its bits, the same at every M.

    The kernel is bound by reading the codes, and on an SM by issuing its instructions (about 190 a
    KB of codes): the best shape runs in one wave with the blocks spread evenly over the SMs
    (`balance`: the busiest SM's blocks against the mean) and enough warps in flight (`fill`).
    Ties go to fewer blocks per cluster, then more warps per block."""
    blocks, chunks = -(-n // COLUMNS_PER_BLOCK), k // 32
    best, best_key = (1, 1), None
    for cluster in CLUSTERS:
        for splits in SPLITS:
            if cluster * splits > 1 and chunks < cluster * splits * MIN_CHUNKS_PER_WARP:
                continue
            grid = blocks * cluster
            per_sm = -(-grid // sms)  # blocks on the busiest SM
            if per_sm * splits > WARPS_PER_SM or per_sm * (shared_bytes(splits) + 1024) > SHARED_PER_SM:
                continue  # not one wave
            balance = grid / (sms * per_sm)
            fill = min(1.0, grid * splits / (WARPS_IN_FLIGHT * sms))
            key = (round(balance * fill, 3), -cluster, splits)
            if best_key is None or key > best_key:
                best, best_key = (splits, cluster), key
    return best  # (1, 1) where no shape fits one wave (N over 64 * 16 * sms): many small blocks


def shared_bytes(splits: int) -> int:
    """Dynamic shared memory of a block of `splits` warps: their rings (the combine's [S][32][32]
    floats and a cluster's [32][32] block sums reuse them)."""
    return splits * STAGES * STAGE_BYTES


def check_operands(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor | None) -> None:
    """ValueError unless the operands are what the kernel reads and writes (layout, shapes and dtypes
    first, then alignment, then device)."""
    if not isinstance(w, TiledAWQWeight):
        raise ValueError(f"awq_gemm: the kernel reads the tiled layout (models/awq.py: tile()), not {type(w).__name__}")
    if x.dim() != 2 or any(t.dim() != 3 for t in w[:3]):
        raise ValueError(f"awq_gemm: x must be 2-D and the tiled tensors 3-D, got {tuple(x.shape)} and "
                         f"{[tuple(t.shape) for t in w[:3]]}")
    (m, k), (blocks, k_w, _) = x.shape, w.qweight.shape
    n = w.n
    if not 1 <= m <= MAX_ROWS:
        raise ValueError(f"awq_gemm: x has {m} rows; the kernel takes 1..{MAX_ROWS}")
    if k != k_w or k == 0 or n <= 0 or n % 8 or blocks != -(-n // COLUMNS_PER_BLOCK):
        raise ValueError(f"awq_gemm: x {tuple(x.shape)} and qweight {tuple(w.qweight.shape)} ([ceil(N/64), K, 8]) "
                         f"of N = {n} do not match")
    groups = w.qzeros.shape[1]
    if groups == 0 or k % groups or (k // groups) % 32 or (k // groups) & (k // groups - 1):
        raise ValueError(f"awq_gemm: K = {k} in {groups} groups: the group size must be a power of two, "
                         f"a multiple of 32")
    if tuple(w.qweight.shape) != (blocks, k, 8) or tuple(w.qzeros.shape) != (blocks, groups, 8) \
            or tuple(w.scales.shape) != (blocks, groups, COLUMNS_PER_BLOCK):
        raise ValueError(f"awq_gemm: qzeros {tuple(w.qzeros.shape)} and scales {tuple(w.scales.shape)} do not fit "
                         f"qweight {tuple(w.qweight.shape)}")
    tensors = {"x": x, "qweight": w.qweight, "qzeros": w.qzeros, "scales": w.scales}
    dtypes = {"x": torch.bfloat16, "qweight": torch.int32, "qzeros": torch.int32, "scales": torch.float16}
    check_common("awq_gemm", x, m, n, k, tensors, dtypes, bias, out, aligned=("x", "qweight", "qzeros", "scales"),
                 margin=64)
    if k > 2**26 or n > 2**27:  # the kernel's lane offsets: 16 rows of x in 32 bits
        raise ValueError(f"awq_gemm: [{n}, {k}] does not fit the kernel's 32-bit offsets")


def awq_gemm(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None = None,
             out: torch.Tensor | None = None) -> torch.Tensor:
    """x: [M, K] bf16 contiguous, 1 <= M <= 16; w: an [N, K] weight's AWQ tensors tiled (awq.tile;
    group a power of two, 32 or more: the kernel finds a chunk's group by a shift); bias: [N] bf16
    or None; out: [M, N] bf16 (written) or None (allocated).
    -> out = x @ W.T + bias, fp32 accumulation, rounded once to bf16."""
    check_operands(x, w, bias, out)
    if out is None:
        out = torch.empty(x.shape[0], w.n, dtype=x.dtype, device=x.device)
    splits, cluster = plan(w.n, x.shape[1], _sm_count(x.device.index))
    launch_shape(x, w, bias, out, splits, cluster)
    return out


def launch_shape(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor, splits: int,
                 cluster: int) -> None:
    """Launch the kernel on checked operands in clusters of `cluster` blocks of `splits` warps (awq_gemm
    takes them from plan(); the GPU tests run every shape)."""
    (m, k), n = x.shape, w.n
    group_shift = (w.group // 32).bit_length() - 1  # group = chunk >> group_shift
    with torch.cuda.device(x.device):
        launch("awq_gemm", f"awq_gemm_c{cluster}", (w.qweight.shape[0] * cluster,), (32 * splits,),
               (ptr(x), ptr(w.qweight), ptr(w.qzeros), ptr(w.scales), np.uint64(0) if bias is None else ptr(bias),
                ptr(out), np.int32(m), np.int32(n), np.int32(k), np.int32(group_shift)),
               shared_mem=shared_bytes(splits), pdl=cluster == 1)  # PDL for cluster launches: not tried yet
