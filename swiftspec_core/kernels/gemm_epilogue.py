"""The row-invariant GEMM (kernels/gemm.py) with the op after it fused into its epilogue, each with
its torch reference beside it:

- gemm_swiglu (cuda/gemm_swiglu.cu): the MLP's gate_up projection and SwiGLU in one kernel,
  bitwise equal to swiglu(gemm(x, w_gate_up)).

At M <= 16 every kernel of a layer costs a launch gap and a dependent round trip through DRAM; an
epilogue that does the next op on the block's own tile removes both. Each fused kernel runs gemm's
main loop and combine with gemm's own launch plan (plan() on the whole weight), so the GEMM part
of its result has gemm's bits, and the epilogue repeats the next kernel's arithmetic exactly.
"""
from __future__ import annotations

import numpy as np
import torch

from .build import launch, ptr
from .gemm import _sm_count, check_operands, gemm_reference, plan
from .norm import swiglu_reference


def gemm_swiglu_reference(x: torch.Tensor, w_gate_up: torch.Tensor) -> torch.Tensor:
    """swiglu of gemm, both references: [gate | up] = x @ w_gate_up.T rounded once to x's dtype,
    then silu(gate) * up in fp32 rounded once. x [M, K], w_gate_up [2F, K] -> [M, F]."""
    return swiglu_reference(gemm_reference(x, w_gate_up))


def swiglu_tiles(nt: int) -> int:
    """The fused kernel's tiles per warp when gemm's plan gives nt: nt / 2 tiles of gate and as many
    of up, at least one of each (gemm_swiglu_nt2 where gemm would run nt = 1)."""
    return max(nt, 2)


def gemm_swiglu(x: torch.Tensor, w_gate_up: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """x: [M, K] bf16 contiguous, 1 <= M <= 16; w_gate_up: [2F, K] bf16 contiguous (gate rows, then
    up rows: the engine's w_gate_up); out: [M, F] bf16 (written) or None (allocated).
    -> silu(gate) * up, bitwise equal to norm.swiglu(gemm.gemm(x, w_gate_up))."""
    two_f = w_gate_up.shape[0] if w_gate_up.dim() == 2 else 0
    if two_f % 2:
        raise ValueError(f"gemm_swiglu: w_gate_up has {two_f} rows; it must be [2F, K] (gate, then up)")
    check_operands(x, w_gate_up, None, out, op="gemm_swiglu", out_cols=two_f // 2)
    (m, k), f = x.shape, two_f // 2
    if out is None:
        out = torch.empty(m, f, dtype=x.dtype, device=x.device)
    with torch.cuda.device(x.device):
        # gemm's own plan for the whole [2F, K] weight: the same S, so the same bits per column.
        nt, splits = plan(two_f, k, _sm_count(x.device.index))
        tiles = swiglu_tiles(nt)
        launch("gemm_swiglu", f"gemm_swiglu_nt{tiles}", (-(-f // (4 * tiles)),), (32 * splits,),
               (ptr(x), ptr(w_gate_up), ptr(out), np.int32(m), np.int32(f), np.int32(k)),
               shared_mem=splits * tiles * 4 * 32 * 4)  # [S][tiles * 4][32] floats
    return out
