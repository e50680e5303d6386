"""The RMSNorms of a one-GPU AWQ forward folded into the GEMMs around them (NOTES v109, v110).

In the 70B AWQ forward the two add + RMSNorm kernels a layer cost 7.5 us (forward_ablation.py): an
AWQ GEMM's block takes most of an SM's shared memory, so a small kernel between two of them is one
more hand-over. Here the GEMM before a norm (o_proj, down_proj) adds the residual in its epilogue
(h += x @ W.T in place, torch's bf16 add), and writes the next GEMM's x as h * g / unit (rounded once
to its operand dtype, bf16 or fp16) and, for each 64-column tile of h, each row's sum of h^2 (sums
[N / 64, 16] fp32); the GEMM after it (qkv; gate_up with SwiGLU) scales each row's sums by r = unit /
sqrt(mean(h^2) + eps), adding the tiles' sums in a fixed order, before the bias and the one
rounding. That is gemm's norm= (r * (bf16(x * g) @ W.T) + bias) with r from the GEMM before instead of
from the x loaded: the AWQ GEMM's loop is the same (a norm inside it cost 22% more instructions a
group: v110). A row's r depends on its own h alone, so rows stay invariant.

The unit, a power of two, is fp16's headroom: x is h * g before the norm's scaling, so in fp16 it
would saturate (65504) where |h * g| passes it, which a real model's large residual channels can do
where their g > 1. Dividing by a power of two moves no bit of a normal fp16 number (only values that
fall below fp16's smallest normal, 2^-14 unit, keep fewer bits: an absolute error of at most 2^-25
unit each, less than bf16 rounds any value above 2^-16 unit by), so a forward picks unit >= every |g|
of its norms (models/transformer.py: norm_x_unit) and any h within fp16's range fits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .awq_gemm import (COLUMNS_PER_BLOCK, OPERAND_DTYPES, TiledAWQWeight, check_operands, dequantize, output_dtype,
                       run_planned, run_swiglu, swiglu_operand, to_operand)
from .gemm import gemm_reference

SUM_ROWS = 16  # the rows a tile's sums hold (MAX_ROWS)


@dataclass
class NextNorm:
    """The RMSNorm after a GEMM: its weight g [N], the next GEMM's x = out * g / unit [M, N] (bf16, or
    fp16 for the fp16-operand kernels: awq_gemm.to_operand) and the sums of out^2 [N / 64, SUM_ROWS]
    (norm_sums) that GEMM scales by; unit a power of two (the next GEMM takes it as x_unit)."""
    weight: torch.Tensor
    x: torch.Tensor
    sums: torch.Tensor
    unit: float = 1.0


def norm_sums(n: int, device) -> torch.Tensor:
    """The sums buffer of an N-wide norm: [N / 64, SUM_ROWS] fp32."""
    return torch.zeros(-(-n // COLUMNS_PER_BLOCK), SUM_ROWS, dtype=torch.float32, device=device)


def row_scale_reference(sums: torch.Tensor, m: int, k: int, eps: float, x_unit: float = 1.0) -> torch.Tensor:
    """r [M] = x_unit / sqrt(mean(h^2) + eps) from a K-wide norm's sums."""
    return torch.rsqrt(sums[: k // COLUMNS_PER_BLOCK, :m].double().sum(0) / k + eps).float() * x_unit


def awq_gemm_norms_reference(x, w, bias=None, out=None, row_sums=None, eps: float = 0.0, residual=None,
                             next_norm: NextNorm | None = None, x_unit: float = 1.0) -> torch.Tensor:
    """As awq_gemm_norms, in torch on any device: x @ dequantize(w).T in fp32 (weights rounded to x's
    dtype first, as awq_gemm_reference), times r (row_sums, x_unit), plus the bias, rounded once; plus
    the residual (rounded once); then next_norm's x and sums."""
    m, k = x.shape
    r = None if row_sums is None else row_scale_reference(row_sums, m, k, eps, x_unit)
    y = gemm_reference(x, dequantize(w, x.dtype), bias, residual=residual, row_scale=r, dtype=output_dtype(x.dtype))
    if next_norm is not None:
        n = y.shape[1]
        wide = y.to(torch.promote_types(y.dtype, torch.float32))  # fp32, fp64 stays fp64
        scaled = wide * next_norm.weight.to(wide.dtype) * (1.0 / next_norm.unit)  # exact: a power of two
        next_norm.x.copy_(to_operand(scaled, next_norm.x.dtype))
        tiles = y.float().square().view(m, n // COLUMNS_PER_BLOCK, COLUMNS_PER_BLOCK).sum(-1)  # [M, N / 64]
        next_norm.sums[: n // COLUMNS_PER_BLOCK, :m] = tiles.T
    return y if out is None else out.copy_(y)


def awq_swiglu_norms_reference(x, w, out=None, row_sums=None, eps: float = 0.0, x_unit: float = 1.0) -> torch.Tensor:
    """As awq_swiglu_norms: SwiGLU of the GEMM's outputs in fp32 (or wider), rounded once to out's
    dtype (x's where out is None)."""
    gate_up = awq_gemm_norms_reference(x, w, row_sums=row_sums, eps=eps, x_unit=x_unit)
    act = swiglu_operand(gate_up, x.dtype if out is None else out.dtype)
    return act if out is None else out.copy_(act)


def is_unit(u: float) -> bool:
    """Whether u is a power of two (a scale that moves no bit of a normal number)."""
    return u > 0 and math.isfinite(u) and math.frexp(u)[0] == 0.5


def _check(op: str, x: torch.Tensor, n: int, row_sums, residual, next_norm: NextNorm | None,
           x_unit: float) -> None:
    m, k = x.shape
    for name, u in (("x_unit", x_unit), ("next norm unit", 1.0 if next_norm is None else next_norm.unit)):
        if not is_unit(u):
            raise ValueError(f"{op}: {name} must be a power of two, got {u}")
    if row_sums is not None and (row_sums.dtype != torch.float32 or not row_sums.is_contiguous()
                                 or row_sums.device != x.device or row_sums.shape != (k // COLUMNS_PER_BLOCK, SUM_ROWS)
                                 or k % COLUMNS_PER_BLOCK):
        raise ValueError(f"{op}: row_sums must be contiguous fp32 [{k // COLUMNS_PER_BLOCK}, {SUM_ROWS}] on x's "
                         f"device (K = {k} a multiple of {COLUMNS_PER_BLOCK})")
    if residual is not None and (residual.shape != (m, n) or residual.dtype != torch.bfloat16
                                 or not residual.is_contiguous() or residual.device != x.device):
        raise ValueError(f"{op}: residual must be contiguous bf16 [{m}, {n}] on x's device")
    if next_norm is not None:
        g, nx, sums = next_norm.weight, next_norm.x, next_norm.sums
        if n % COLUMNS_PER_BLOCK or g.shape != (n,) or nx.shape != (m, n) or sums.shape != (n // COLUMNS_PER_BLOCK,
                                                                                         SUM_ROWS):
            raise ValueError(f"{op}: next norm: weight [{n}], x [{m}, {n}], sums [{n // COLUMNS_PER_BLOCK}, "
                             f"{SUM_ROWS}] (N a multiple of {COLUMNS_PER_BLOCK}), got {tuple(g.shape)}, "
                             f"{tuple(nx.shape)}, {tuple(sums.shape)}")
        for name, t, dtypes in (("weight", g, (torch.bfloat16,)), ("x", nx, OPERAND_DTYPES),
                                ("sums", sums, (torch.float32,))):
            if t.dtype not in dtypes or not t.is_contiguous() or t.device != x.device:
                raise ValueError(f"{op}: next norm {name} must be contiguous {' or '.join(map(str, dtypes))} "
                                 "on x's device")


def awq_gemm_norms(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None = None,
                   out: torch.Tensor | None = None, row_sums: torch.Tensor | None = None, eps: float = 0.0,
                   residual: torch.Tensor | None = None, next_norm: NextNorm | None = None,
                   x_unit: float = 1.0) -> torch.Tensor:
    """awq_gemm (x, w, bias, out as there) with the norms folded in: row_sums (with eps), the sums a
    GEMM before wrote for the RMSNorm of x's rows (x = h * g / x_unit, rounded); residual [M, N] added
    to the output (out may be it); next_norm, the RMSNorm after. With next_norm the GEMM runs in blocks
    that each hold a whole tile (plan without clusters)."""
    check_operands(x, w, bias, out)
    _check("awq_gemm_norms", x, w.n, row_sums, residual, next_norm, x_unit)
    return run_planned(x, w, bias, out, clusters=next_norm is None,
                       norms=_operands(row_sums, residual, next_norm, eps, x_unit))


def awq_swiglu_norms(x: torch.Tensor, w: TiledAWQWeight, out: torch.Tensor | None = None,
                     row_sums: torch.Tensor | None = None, eps: float = 0.0, x_unit: float = 1.0) -> torch.Tensor:
    """awq_swiglu (x, w, out as there) of the RMSNorm whose sums row_sums holds (x = h * g / x_unit,
    rounded)."""
    check_operands(x, w, None, out, out_cols=w.n // 2)
    _check("awq_swiglu_norms", x, w.n, row_sums, None, None, x_unit)
    return run_swiglu(x, w, out, norms=_operands(row_sums, None, None, eps, x_unit))


def _operands(row_sums, residual, next_norm: NextNorm | None, eps: float, x_unit: float) -> tuple:
    """awq_gemm.launch_shape's norms: the tensors, then eps, x_unit and 1 / the next norm's unit."""
    nxt = (None, None, None) if next_norm is None else (next_norm.weight, next_norm.x, next_norm.sums)
    next_x_scale = 1.0 if next_norm is None else 1.0 / next_norm.unit
    return (row_sums, residual, *nxt, float(eps), float(x_unit), next_x_scale)
