"""The row-invariant GEMM (kernels/gemm.py) with the op after it fused into its epilogue, each with
its torch reference beside it:

- gemm_swiglu (cuda/gemm_swiglu.cu): the MLP's gate_up projection and SwiGLU in one kernel,
  bitwise equal to swiglu(gemm(x, w_gate_up));
- fused_gemm_allreduce (cuda/gemm_allreduce.cu): the row-parallel o_proj / down_proj and the LL
  all-reduce over the tensor-parallel ranks in one kernel, bitwise equal to LLAllReduce(gemm(x, w))
  (allreduce.gemm_allreduce, the unfused pair).

At M <= 16 every kernel of a layer costs a launch gap and a dependent round trip through DRAM; an
epilogue that does the next op on the block's own tile removes both. Each fused kernel runs gemm's
main loop and combine with gemm's own launch plan (plan() on the whole weight), so the GEMM part
of its result has gemm's bits, and the epilogue repeats the next kernel's arithmetic exactly.
"""
from __future__ import annotations

import numpy as np
import torch

from .allreduce import Exchange, LLAllReduce, PeerInbox, all_reduce_reference
from .build import function, launch, ptr
from .gemm import MAX_ROWS, _sm_count, check_operands, combine_bytes, gemm_reference, norm_args, plan, planned
from .norm import swiglu_reference

LINE_ELEMENTS = 4  # bf16 an LL line carries (8 data bytes)


def gemm_swiglu_reference(x: torch.Tensor, w_gate_up: torch.Tensor, out: torch.Tensor | None = None,
                          norm: tuple[torch.Tensor, float] | None = None) -> torch.Tensor:
    """swiglu of gemm, both references: [gate | up] = x @ w_gate_up.T (of rmsnorm(x) with norm, as
    gemm_reference) rounded once to x's dtype, then silu(gate) * up in fp32 rounded once.
    x [M, K], w_gate_up [2F, K] -> [M, F]."""
    return swiglu_reference(gemm_reference(x, w_gate_up, norm=norm), out)


def swiglu_tiles(nt: int) -> int:
    """The fused kernel's tiles per warp when gemm's plan gives nt: nt / 2 tiles of gate and as many
    of up, at least one of each (gemm_swiglu_nt2 where gemm would run nt = 1)."""
    return max(nt, 2)


def gemm_swiglu(x: torch.Tensor, w_gate_up: torch.Tensor, out: torch.Tensor | None = None,
                norm: tuple[torch.Tensor, float] | None = None) -> torch.Tensor:
    """x: [M, K] bf16 contiguous, 1 <= M <= 16; w_gate_up: [2F, K] bf16 contiguous (gate rows, then
    up rows: the engine's w_gate_up); out: [M, F] bf16 (written) or None (allocated); norm = (g [K],
    eps): of rmsnorm(x) as gemm's norm. -> silu(gate) * up, bitwise equal to
    norm.swiglu(gemm.gemm(x, w_gate_up, norm=norm))."""
    two_f = w_gate_up.shape[0] if w_gate_up.dim() == 2 else 0
    if two_f % 2:
        raise ValueError(f"gemm_swiglu: w_gate_up has {two_f} rows; it must be [2F, K] (gate, then up)")
    check_operands(x, w_gate_up, None, out, op="gemm_swiglu", out_cols=two_f // 2, norm=norm)
    (m, k), f = x.shape, two_f // 2
    if out is None:
        out = torch.empty(m, f, dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device):
        # gemm's own plan for the whole [2F, K] weight: the same S, so the same bits per column.
        nt, splits = planned(two_f, k, x.device, norm)
        tiles, (g, eps) = swiglu_tiles(nt), norm_args(norm)
        launch("gemm_swiglu", f"gemm_swiglu_norm_nt{tiles}" if norm else f"gemm_swiglu_nt{tiles}",
               (-(-f // (4 * tiles)),), (32 * splits,),
               (ptr(x), ptr(w_gate_up), g, ptr(out), np.int32(m), np.int32(f), np.int32(k), eps),
               shared_mem=combine_bytes(splits, tiles, k if norm else 0))
    return out


def gemm_allreduce_reference(xs: list[torch.Tensor], ws: list[torch.Tensor]) -> torch.Tensor:
    """The ranks' x_r [M, K] @ w_r [N, K].T, each rounded once to bf16 (gemm_reference), summed as
    all_reduce_reference sums: fp32, rank order from rank 0's value, rounded once."""
    return all_reduce_reference([gemm_reference(x, w) for x, w in zip(xs, ws)])


def line_aligned_out(op: str, x: torch.Tensor, n: int, out: torch.Tensor | None) -> torch.Tensor:
    """A fused GEMM + all-reduce's out [M, N] bf16: allocated where None, else checked 8-byte aligned
    (the epilogue stores a line's 4 bf16 at once)."""
    if out is None:
        return torch.empty(x.shape[0], n, dtype=torch.bfloat16, device=x.device)
    if out.data_ptr() % (2 * LINE_ELEMENTS):
        raise ValueError(f"{op}: out is not 8-byte aligned (a line's 4 bf16 are stored at once)")
    return out


class GemmAllReduce(PeerInbox):
    """The inboxes and epochs of the fused GEMM + all-reduce for one output width N and one tile
    width NT (gemm.plan's, which depends on N alone): 16 rows of N / 4 lines per (half, sender),
    one epoch per GEMM block (a block owns its column tile's lines; cuda/gemm_allreduce.cu).
    o_proj and down_proj of a model share N, so they share one. Collective as PeerInbox; made
    through LLAllReduce.companion by fused_gemm_allreduce."""

    def __init__(self, rank: int, world: int, exchange: Exchange, n: int, nt: int, timeout_s: float = 120.0):
        if n <= 0 or n % LINE_ELEMENTS:
            raise ValueError(f"gemm_allreduce: N = {n} is not a positive multiple of {LINE_ELEMENTS} (LL lines)")
        super().__init__(rank, world, exchange, MAX_ROWS * n // LINE_ELEMENTS, f"GemmAllReduce(n={n}, nt={nt})",
                         timeout_s)
        self.n, self.nt = n, nt
        self.kernel = f"gemm_allreduce_nt{nt}"
        self.epochs = torch.zeros(-(-n // (8 * nt)), dtype=torch.int32, device=self.device)
        function("gemm_allreduce", self.kernel, self.device, 0)  # compiled now, not inside a capture

    def __call__(self, x: torch.Tensor, w: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """x: [M, K] bf16, this rank's K shard; w: [N, K] bf16; out: [M, N] bf16 or None.
        -> out = the sum over the ranks of x @ w.T, every rank the same bits."""
        check_operands(x, w, None, out, op="gemm_allreduce")
        (m, k), n = x.shape, w.shape[0]
        self.check_call("gemm_allreduce", x)
        nt, splits = plan(n, k, _sm_count(self.device))
        if (n, nt) != (self.n, self.nt):
            raise ValueError(f"gemm_allreduce: this inbox is for N = {self.n}, NT = {self.nt}; got N = {n}, NT = {nt}")
        out = line_aligned_out("gemm_allreduce", x, n, out)
        with torch.cuda.device(x.device):
            launch("gemm_allreduce", self.kernel, (self.epochs.numel(),), (32 * splits,),
                   (ptr(x), ptr(w), ptr(out), np.int32(m), np.int32(n), np.int32(k), ptr(self.peers),
                    ptr(self.epochs), np.int32(self.rank), np.int32(self.world), np.int64(self.lines),
                    np.uint64(self.timeout_ns)),
                   shared_mem=combine_bytes(splits, nt))
        return out


def fused_gemm_allreduce(x: torch.Tensor, w: torch.Tensor, ar: LLAllReduce,
                         out: torch.Tensor | None = None) -> torch.Tensor:
    """The row-parallel o_proj / down_proj in one kernel: x [M, K_shard] @ w [N, K_shard].T summed
    over ar's ranks, bitwise equal to allreduce.gemm_allreduce (gemm, then ar). Its inbox is ar's
    companion for (N, NT), made at the first call: collective, so that call must run on every rank
    together and outside a CUDA graph capture (a warm-up does it)."""
    check_operands(x, w, None, out, op="gemm_allreduce")
    n, k = w.shape
    nt, _ = plan(n, k, _sm_count(x.device.index))
    fused = ar.companion(("gemm_allreduce", n, nt), lambda rank, world, exchange, timeout_s:
                         GemmAllReduce(rank, world, exchange, n, nt, timeout_s))
    return fused(x, w, out)
