"""AWQ weights in the tiled layout -> the bf16 [N, K] nn.Linear weight, on the GPU in one pass
(cuda/awq_dequantize.cu): what a prefill's F.linear takes, reading the 4-bit codes once and writing
the weight once. use_for_prefills hands it to models/awq.py (use_dequantize_kernel) in every
process that builds --kernels fused engines; dequantize() then calls it for a tiled weight on CUDA
in bf16.

Bitwise the torch path of models/awq.py dequantize(w, torch.bfloat16) (its reference; the GPU tests
compare the two with torch.equal): (q - zero) * scale in fp32, rounded once to bf16. Elementwise, so
no reduction order to keep.
"""
from __future__ import annotations

import numpy as np
import torch

from ..models.awq import PACK, TILE_COLUMNS, use_dequantize_kernel
from .build import launch, ptr

ROWS = 64  # k per block (DQ_ROWS): the last block of a K % 64 == 32 weight takes 32
THREADS = 256  # DQ_THREADS
MAX_TILES = 65535  # gridDim.y


def check_operands(qweight: torch.Tensor, qzeros: torch.Tensor, scales: torch.Tensor, n: int,
                   out: torch.Tensor | None) -> None:
    """ValueError unless the operands are what the kernel reads and writes: shapes, then dtypes and
    contiguity, then alignment, then device (all before any CUDA call, so bad input fails on CPU too)."""
    tensors = {"qweight": qweight, "qzeros": qzeros, "scales": scales}
    if any(t.dim() != 3 for t in tensors.values()):
        raise ValueError(f"awq_dequantize: qweight, qzeros, scales must be 3-D (the tiled layout), got "
                         f"{[tuple(t.shape) for t in tensors.values()]}")
    tiles, k, width = qweight.shape
    if n <= 0 or n % PACK or tiles != -(-n // TILE_COLUMNS) or width != PACK:
        raise ValueError(f"awq_dequantize: qweight {tuple(qweight.shape)} is not [ceil(N / 64), K, 8] for N = {n} "
                         f"(N a positive multiple of 8)")
    groups = qzeros.shape[1]
    group = k // groups if groups else 0
    if k == 0 or groups == 0 or k % groups or group < 32 or group & (group - 1):
        raise ValueError(f"awq_dequantize: K = {k} in {groups} groups: the group size must be a power of two "
                         f">= 32 dividing K")
    if tuple(qzeros.shape) != (tiles, groups, PACK) or tuple(scales.shape) != (tiles, groups, TILE_COLUMNS):
        raise ValueError(f"awq_dequantize: qzeros {tuple(qzeros.shape)} and scales {tuple(scales.shape)} are not "
                         f"[{tiles}, {groups}, 8] and [{tiles}, {groups}, 64] (qweight {tuple(qweight.shape)})")
    if tiles > MAX_TILES or k > 2**31 - 1 - ROWS:  # blockIdx.y; the kernel's int32 k (its offsets are 64-bit)
        raise ValueError(f"awq_dequantize: [{n}, {k}] is past the kernel's grid ({MAX_TILES} tiles of 64 columns) "
                         f"or its int32 K")
    if out is not None:
        if tuple(out.shape) != (n, k):
            raise ValueError(f"awq_dequantize: out must be [{n}, {k}], got {tuple(out.shape)}")
        tensors["out"] = out
    dtypes = {"qweight": torch.int32, "qzeros": torch.int32, "scales": torch.float16, "out": torch.bfloat16}
    for name, t in tensors.items():
        if t.dtype != dtypes[name]:
            want = str(dtypes[name]).removeprefix("torch.")
            raise ValueError(f"awq_dequantize: {name} must be {want}, got {t.dtype}")
        if not t.is_contiguous():
            raise ValueError(f"awq_dequantize: {name} must be contiguous")
    for name in ("qweight", "out"):  # 16-byte code loads, 16-byte stores of 8 k (K % 32 == 0 keeps rows aligned)
        if name in tensors and tensors[name].data_ptr() % 16:
            raise ValueError(f"awq_dequantize: {name} is not 16-byte aligned (the kernel moves 16 bytes at a time)")
    device = qweight.device
    for name, t in tensors.items():
        if t.device.type != "cuda" or t.device != device:
            raise ValueError(f"awq_dequantize: {name} is on {t.device}; every operand must be on qweight's CUDA device")


def awq_dequantize(qweight: torch.Tensor, qzeros: torch.Tensor, scales: torch.Tensor, n: int,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """qweight int32 [B, K, 8], qzeros int32 [B, K / G, 8], scales fp16 [B, K / G, 64]: an [n, K] weight's
    AWQ tensors tiled (models/awq.py tile(); B = ceil(n / 64), G a power of two >= 32), contiguous on one
    CUDA device; out: [n, K] bf16 (written) or None (allocated).
    -> out[i, k] = bf16(float(q - zero) * float(scale)), every element written."""
    check_operands(qweight, qzeros, scales, n, out)
    tiles, k, _ = qweight.shape
    if out is None:
        out = torch.empty(n, k, dtype=torch.bfloat16, device=qweight.device)
    group_shift = (k // qzeros.shape[1]).bit_length() - 1  # group = k >> group_shift
    with torch.cuda.device(qweight.device):
        launch("awq_dequantize", "awq_dequantize", (-(-k // ROWS), tiles), (THREADS,),
               (ptr(qweight), ptr(qzeros), ptr(scales), ptr(out), np.int32(n), np.int32(k), np.int32(group_shift)))
    return out


def use_for_prefills(kernels: str) -> None:
    """Prefills of this process's engines dequantize tiled AWQ layers with the kernel once an engine
    of --kernels fused (the only ones holding the tiled layout) is built here; an engine of another
    set built after it (a run's second kernel set, --kernels fused,torch) leaves it handed in, as
    dequantize() takes it for tiled weights only, bitwise the torch path."""
    if kernels == "fused":
        use_dequantize_kernel(awq_dequantize)
