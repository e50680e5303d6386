"""The k largest logits of each row, their indices and the row's logsumexp (cuda/topk.cu), and the
torch reference beside it.

A draft step needs each expanded row's w best children with their log-probs, a verification each
row's argmax, runner-up and top-2 margin. torch.topk's radix select plus a logsumexp cost ~20
kernels and ~0.1 ms after every forward on an H200 (profile_split); here two launches: each row's
slices in parallel, then one warp a row merges them.

Ranking: values descending, equal values by index ascending (torch.argmax's first maximum), so a
row's result depends on that row alone; the values and indices are exactly the reference's. The
logsumexp is max + log(sum exp(x - max)) summed in a fixed order: within a few ulps of torch's.
"""
from __future__ import annotations

import numpy as np
import torch

from .build import launch, ptr

KS = (2, 4, 8, 16)  # the instantiations in cuda/topk.cu (topk_part_k2, topk_merge_k2, ...)
THREADS = 256  # cuda/topk.cu's THREADS
MAX_SLICES = 32  # topk_merge's warp holds one slice's list a lane
SLICE_TARGET = 4096  # positions a block: 16 a thread, and a 128k row's 32 slices x 9-16 rows fill the GPU


def slices(vocab: int) -> int:
    """How many blocks share a row: from V alone, so a row's sums run in one order whatever T is."""
    return min(MAX_SLICES, -(-vocab // SLICE_TARGET))


def topk_reference(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """logits [T, V] float -> (values [T, k] fp32, indices [T, k] int64, logsumexp [T] fp32), ranked
    as the kernel ranks (a stable descending sort keeps equal values in index order)."""
    x = logits.float()
    values, indices = torch.sort(x, dim=-1, descending=True, stable=True)
    return values[:, :k].contiguous(), indices[:, :k].contiguous(), torch.logsumexp(x, dim=-1)


def supports(logits: torch.Tensor, k: int) -> bool:
    """Whether the kernel takes these logits: fp32 CUDA [T, V] with unit stride along V, 1 <= k <=
    the largest instantiation, V >= k."""
    return (logits.is_cuda and logits.dtype == torch.float32 and logits.dim() == 2 and logits.stride(1) == 1
            and 1 <= k <= KS[-1] and logits.shape[1] >= k and logits.shape[0] > 0)


def topk(logits: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """As topk_reference, on the GPU in two kernels. logits: fp32 CUDA [T, V], rows may be strided
    (a slice of a larger buffer), elements contiguous."""
    if not supports(logits, k):
        raise ValueError(f"topk: takes fp32 CUDA [T, V] logits with contiguous rows, V >= k, 1 <= k <= {KS[-1]}; "
                         f"got {logits.dtype} {tuple(logits.shape)} stride {logits.stride()} on {logits.device}, k {k}")
    rows, vocab = logits.shape
    kk = next(c for c in KS if c >= k)  # a longer list ranks its first k the same
    values = torch.empty(rows, kk, dtype=torch.float32, device=logits.device)
    indices = torch.empty(rows, kk, dtype=torch.int64, device=logits.device)
    lse = torch.empty(rows, dtype=torch.float32, device=logits.device)
    n_slices = slices(vocab)
    slice_len = -(-vocab // n_slices)
    part_v = torch.empty(rows, n_slices, kk, dtype=torch.float32, device=logits.device)
    part_i = torch.empty(rows, n_slices, kk, dtype=torch.int32, device=logits.device)
    part_m = torch.empty(rows, n_slices, dtype=torch.float32, device=logits.device)
    part_s = torch.empty(rows, n_slices, dtype=torch.float32, device=logits.device)
    parts = (ptr(part_v), ptr(part_i), ptr(part_m), ptr(part_s))
    with torch.cuda.device(logits.device):
        launch("topk", f"topk_part_k{kk}", (rows, n_slices), (THREADS,),
               (ptr(logits), np.int64(logits.stride(0)), np.int32(vocab), np.int32(slice_len)) + parts)
        launch("topk", f"topk_merge_k{kk}", (rows,), (32,),
               parts + (np.int32(n_slices), ptr(values), ptr(indices), ptr(lse)))
    return values[:, :k], indices[:, :k], lse


def runs_kernel(logits: torch.Tensor, k: int, fused: bool) -> bool:
    """Whether top_k takes the kernel for these logits (so equal values come in index order)."""
    return fused and supports(logits, k)


def top_k(logits: torch.Tensor, k: int, fused: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The decoders' entry: the kernel where `fused` (the engine runs our kernels) and it takes the
    logits (runs_kernel), else torch.topk and torch.logsumexp (the torch kernel set and the CPU: a
    sort of the whole vocabulary would be slower there; only the order of equal values can differ)."""
    if runs_kernel(logits, k, fused):
        return topk(logits, k)
    top = logits.topk(k, dim=-1)
    return top.values, top.indices, torch.logsumexp(logits, dim=-1)
