"""The row-parallel AWQ GEMM with the LL all-reduce in its epilogue (cuda/awq_gemm_allreduce.cu): a
4-bit model's o_proj / down_proj under tensor parallelism in one kernel, bitwise equal to the
unfused pair awq_gemm_then_allreduce (awq_gemm at plan(clusters=False), then LLAllReduce), as
gemm_epilogue.fused_gemm_allreduce is for bf16 weights.

The pair reads the GEMM's [M, N] output back and pays a second launch and its start; the fused
kernel sends each block's bf16 tile from shared memory straight into the peers' inboxes. Its GEMM
part is awq_gemm's block at C = 1 (the all-reduce epilogue takes one block a tile), so where plan()
would pick clusters for a shard the fused result has the bits of the C = 1 plan, not awq_gemm's:
the TP forward runs the fused kernel at every step, so its rows stay invariant.
"""
from __future__ import annotations

import numpy as np
import torch

from .allreduce import Exchange, LLAllReduce, PeerInbox, all_reduce_reference
from .awq_gemm import COLUMNS_PER_BLOCK, MAX_ROWS, awq_gemm_reference, check_operands, kernel_name, plan, \
    run_planned, warp_shared_bytes
from .build import function, launch, ptr
from .gemm import _sm_count
from .gemm_epilogue import LINE_ELEMENTS, line_aligned_out
from swiftspec_core.models.awq import AWQWeight, TiledAWQWeight


def awq_gemm_allreduce_reference(xs: list[torch.Tensor], ws: list[AWQWeight | TiledAWQWeight]) -> torch.Tensor:
    """The ranks' x_r [M, K] @ dequantize(w_r).T, each rounded once to bf16 (awq_gemm_reference),
    summed as all_reduce_reference sums: fp32, rank order from rank 0's value, rounded once."""
    return all_reduce_reference([awq_gemm_reference(x, w) for x, w in zip(xs, ws)])


def awq_gemm_then_allreduce(x: torch.Tensor, w: TiledAWQWeight, ar: LLAllReduce,
                            out: torch.Tensor | None = None) -> torch.Tensor:
    """The unfused pair the fused kernel equals bitwise: awq_gemm at plan(clusters=False), then ar."""
    check_operands(x, w, None, out)
    return ar(run_planned(x, w, None, out, clusters=False))


class AWQGemmAllReduce(PeerInbox):
    """The inboxes and epochs of the fused AWQ GEMM + all-reduce for one output width N: 16 rows of
    N / 4 lines per (half, sender), one epoch per block (ceil(N / 64) tiles, a block each, owning
    its tile's lines; ll_line.cuh's allreduce_tile). o_proj and down_proj of a model share N, so
    they share one. Collective as PeerInbox; made through LLAllReduce.companion by
    awq_gemm_allreduce."""

    def __init__(self, rank: int, world: int, exchange: Exchange, n: int, timeout_s: float = 120.0):
        if n <= 0 or n % LINE_ELEMENTS:
            raise ValueError(f"awq_gemm_allreduce: N = {n} is not a positive multiple of {LINE_ELEMENTS} (LL lines)")
        super().__init__(rank, world, exchange, MAX_ROWS * n // LINE_ELEMENTS, f"AWQGemmAllReduce(n={n})", timeout_s)
        self.n = n
        self.epochs = torch.zeros(-(-n // COLUMNS_PER_BLOCK), dtype=torch.int32, device=self.device)
        # compiled now (one module for every kernel), not at a first call inside a graph capture
        function("awq_gemm_allreduce", kernel_name(8, 128, 1, "awq_gemm_allreduce"), self.device, 0)

    def __call__(self, x: torch.Tensor, w: TiledAWQWeight, out: torch.Tensor | None = None) -> torch.Tensor:
        """x: [M, K] bf16 or fp16, this rank's K shard; w: its [N, K] AWQ shard tiled; out: [M, N] bf16
        or None. -> out = the sum over the ranks of x @ W.T, every rank the same bits."""
        check_operands(x, w, None, out)
        (m, k), n = x.shape, w.n
        self.check_call("awq_gemm_allreduce", x)
        if n != self.n:
            raise ValueError(f"awq_gemm_allreduce: this inbox is for N = {self.n}; got N = {n}")
        out = line_aligned_out("awq_gemm_allreduce", x, n, out)
        splits, _ = plan(n, k, w.group, _sm_count(self.device), clusters=False)
        name = kernel_name(m, w.group, 1, "awq_gemm_allreduce", f16=x.dtype == torch.float16)
        with torch.cuda.device(x.device):
            launch("awq_gemm_allreduce", name, (self.epochs.numel(),), (32 * splits,),
                   (ptr(x), ptr(w.qweight), ptr(w.qzeros), ptr(w.scales), ptr(out), np.int32(m), np.int32(n),
                    np.int32(k), ptr(self.peers), ptr(self.epochs), np.int32(self.rank), np.int32(self.world),
                    np.int64(self.lines), np.uint64(self.timeout_ns)),
                   shared_mem=splits * warp_shared_bytes(m))
        return out


def awq_gemm_allreduce(x: torch.Tensor, w: TiledAWQWeight, ar: LLAllReduce,
                       out: torch.Tensor | None = None) -> torch.Tensor:
    """The row-parallel AWQ o_proj / down_proj in one kernel: x [M, K_shard] @ W [N, K_shard].T
    summed over ar's ranks, bitwise awq_gemm_then_allreduce. Its inbox is ar's companion for N,
    made at the first call: collective, so that call must run on every rank together and outside
    a CUDA graph capture (a warm-up does it)."""
    check_operands(x, w, None, out)
    fused = ar.companion(("awq_gemm_allreduce", w.n), lambda rank, world, exchange, timeout_s:
                         AWQGemmAllReduce(rank, world, exchange, w.n, timeout_s))
    return fused(x, w, out)
