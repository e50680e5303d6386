"""L2 prefetch of o_proj's weights by the attention before it (cuda/common.cuh's prefetch_l2_rows).

The attention ends in a tail: its combining blocks merge the chunks' partials while the other
blocks have finished and HBM idles. Those blocks, as they leave, issue L2 prefetches of the first
bytes of every o_proj weight row (a small-M GEMM reads all rows at once, each from its first K on),
at most half the L2 in all, so part of the GEMM's traffic moves into that idle time. A prefetch
changes where the GEMM's loads hit, never a value: outputs are bitwise the same with it or without.
Measured (NOTES v42): issued at a kernel's start it costs that kernel its issue time (~70 GB/s an
SM), so the norms (a block a row: 8 SMs) must not prefetch and the attention only at its end.
"""
from __future__ import annotations

import functools
import os

import numpy as np
import torch

ENABLED = os.environ.get("SWIFTSPEC_PREFETCH", "1") != "0"  # 0: off, for A/B timing only
NONE = (np.uint64(0), np.int32(0), np.int64(0), np.int32(0))  # the kernels' (base, rows, stride, bytes)


def prefetch_args(w: torch.Tensor | None) -> tuple:
    """The kernel arguments (base, rows, stride, bytes) that prefetch the first bytes of every row
    of w [N, K] (a contiguous CUDA tensor at a 16-byte aligned address), a multiple of 16 a row,
    at most half the L2 cache in all. NONE where w is None or not such a tensor, or prefetch is off."""
    if (not ENABLED or w is None or not isinstance(w, torch.Tensor) or w.device.type != "cuda"
            or w.dim() != 2 or not w.is_contiguous() or w.data_ptr() % 16):
        return NONE
    n, row = w.shape[0], w.shape[1] * w.element_size()
    per_row = min(row, _l2_bytes(w.device.index) // 2 // max(n, 1)) // 16 * 16
    if n == 0 or per_row == 0 or row % 16:
        return NONE
    return np.uint64(w.data_ptr()), np.int32(n), np.int64(row), np.int32(per_row)


@functools.cache
def _l2_bytes(device: int) -> int:
    return getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 50 << 20
