"""Row-invariant GEMM on 4-bit AWQ weights for M <= 16 rows (cuda/awq_gemm.cu, version 5): out = x @ W.T
+ bias, W dequantized inside the kernel from AutoAWQ's tensors in the tiled layout (models/awq.py:
tile(), which the engine converts its AWQ layers to once, Transformer.use_kernels), bf16 x and out;
and awq_swiglu, the MLP's gate_up with SwiGLU in the same kernel's epilogue, bitwise
swiglu(awq_gemm(x, w_gate_up)).

As gemm.py: every call runs its rows on the tensor cores in the same instructions (16 rows, the
second 8 only where M > 8, in the r16 kernels; rows 0..7 alike in both), and the launch shape (warps
and blocks splitting K by groups) comes from (N, K, G) and the GPU alone, so a row's bits do not
depend on M, on its index or on the other rows. The kernel reads N * K / 2 bytes of codes where the
bf16 GEMM reads 2 N K: at these M both are bound by reading the weights, and this one first by
issuing its dequantization (~120 warp instructions a KB of codes at M <= 8, NOTES v87), so plan()
aims at ~20 warps on every SM (32 ran no faster, v89), in one wave.

Numerics (version 3's contract, kept by versions 4 and 5): the kernel sums x * (128 + q) over a whole group (G k) in fp32 on
the tensor cores, and x alone beside it, and takes the group's value as fmaf(-(128 + zero), sum of
x, that sum) times the fp32 scale: no weight is rounded (q, zero and 128 are exact in bf16), the
zero is folded in once a group. Its fp32 roundings see values ~20x those of summing q - zero (v1/v2,
which also scaled every 32-k chunk): still ~2^-18 of a result, well under bf16's 2^-9, so outputs
stay bitwise equal to the exact-weight fp32 sum but for rare last-bit differences (the GPU test holds
>= 90% of them equal, a CPU proxy gives >= 99.9%). awq_gemm_reference rounds the weights (q - zero)
* scale to x's dtype first, as the torch path computes; the two differ by that rounding (relative
2^-9 per weight, averaging out over K) and by accumulation order.

fp16 operands (x in fp16: the awq_*_f16 kernels, NOTES v211-v216): fp16's 10 mantissa bits hold a
nibble in place at bits 0..3 and 4..7, so the codes become 1024 + q and 1024 + 16 q with five
instructions a word of codes where bf16 takes seven (the 70B down and qkv ~10% faster at M = 8).
The fold subtracts (1024 + c zero) times x's sum and divides by c (exact). Its sums see ~8x bf16's
magnitudes on half the tiles, so ~99.2% of outputs equal the exact-weight sum where bf16's kernel
gives ~99.9% (70B shapes, random weights); rows stay invariant. The output stays bf16
(output_dtype); awq_swiglu's (the next GEMM's x) and a folded norm's next x (over its unit:
awq_norms.py) may be fp16 (to_operand: rounded once, saturating at +-65504 where bf16 would hold a
larger value). The one-GPU
AWQ forward feeds its GEMMs fp16 where the model runs bf16 (forward.py).
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from swiftspec_core.kernels.build import launch, ptr
from swiftspec_core.kernels.gemm import _sm_count, check_common, gemm_reference
from swiftspec_core.models.awq import TILE_COLUMNS, AWQWeight, TiledAWQWeight, dequantize
from .norm import swiglu, swiglu_reference

MAX_ROWS = 16
COLUMNS_PER_BLOCK = TILE_COLUMNS  # a tile: one warp's four mma tiles
GROUPS = (32, 64, 128)  # the group sizes built (awq_gemm_r*_g{G}_c*): a group's chunks unrolled
STAGES = 4  # 1 KB chunks of codes in each warp's shared-memory ring (AWQ_STAGES): 3 KB in flight a warp
STAGE_BYTES = 1024  # one chunk's codes (AWQ_STAGE_BYTES)
META_BYTES = 160  # a group's 64 fp16 scales and 8 int32 zeros, a slot a stage (AWQ_META_BYTES)
ACCUMULATOR_BYTES = 32 * 32 * 4  # a warp's accumulators in shared memory: [32 lanes][32 floats] (M > 8)
ACCUMULATOR_BYTES_R8 = 32 * 16 * 4  # [32 lanes][16 floats] at M <= 8 (no rows 8..15: cuda's Accumulators)
WARP_SHARED_BYTES = STAGES * (STAGE_BYTES + META_BYTES) + ACCUMULATOR_BYTES  # its ring, then its accumulators
SPLITS = tuple(range(1, 25))  # warps splitting K in one block: __launch_bounds__(AWQ_THREADS = 768)
CLUSTERS = (1, 2, 4, 8)  # blocks splitting K further on the same columns: awq_gemm_r*_g*_c{C}
WARPS_PER_SM = 24  # at most 80 registers a lane (__launch_bounds__(768)): 24 warps fit the 64 K registers
BLOCKS_PER_SM = 32
SHARED_PER_SM = 228 * 1024  # H100/H200, of which 1 KB a block is the system's
# plan()'s score, fitted to every one-wave shape of the 70B (TP 1, 2) and 8B layers timed at M = 8
# (paper_figures/results/2026-12-01-h200-session9/c4, NOTES v40): an SM holding fewer than
# SATURATING_WARPS warps is counted as that many (fewer issue proportionally slower), and a cluster
# of more than one block as CLUSTER_COST_GROUPS more groups on its busiest warp (it launches without
# PDL, so its first copies wait for the kernel before, and it ends in a cluster barrier and a
# combine through distributed shared memory). With them plan() picks within 10% of the fastest
# shape on those 12 layers (3% on average); with 16 and 0 it was up to 1.76x (8B qkv).
SATURATING_WARPS = 18
CLUSTER_COST_GROUPS = 2
# Clusters launch without PDL (launch_shape), so their first copies wait for the kernel before them
# to end, an overlap the isolated timings above cannot see. In the 70B AWQ forward its qkv at (11,
# 1) under PDL ran 120-140 us faster (80 layers) than plan()'s (4, 4) clusters without, though 0.6 us
# slower alone (NOTES v108): plan() takes the best C = 1 shape where its score is within
# PDL_PREFERENCE of the best. Of the Llama 1B / 3B / 8B / 70B and Qwen2-72B layers at TP 1..8 that
# moves only the 70B and 72B TP 1 qkv (1.10 of the best); the next (the TP 8 qkv, the 8B and 1B
# down, 1.20-1.22) keep their clusters.
PDL_PREFERENCE = 1.15
HALF_OUT, HALF_NEXT_X = 1, 2  # the kernels' half_out bits (awq_lanes.cuh: kHalfOut, kHalfNextX)
OPERAND_DTYPES = (torch.bfloat16, torch.float16)  # x: the bf16-operand kernels, or the fp16 ones (_f16)
FP16_MAX = 65504.0


def warp_shared_bytes(m: int) -> int:
    """A warp's shared memory in the kernel for m rows: its ring, then its accumulators (half of them
    at M <= 8). plan() counts WARP_SHARED_BYTES at every M (an M-free plan); the r8 kernels' 2 KB a
    warp less ran 6-10% faster (NOTES v74, v79)."""
    return WARP_SHARED_BYTES - (ACCUMULATOR_BYTES - ACCUMULATOR_BYTES_R8 if m <= 8 else 0)


def output_dtype(x_dtype: torch.dtype) -> torch.dtype:
    """The GEMM's output dtype for x's: bf16 for fp16 operands (the model's dtype), else x's."""
    return torch.bfloat16 if x_dtype == torch.float16 else x_dtype


def to_operand(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """t (fp32 or wider) rounded once to a GEMM operand's dtype; into fp16 saturating at +-FP16_MAX
    (NaN stays NaN), as the kernels' epilogues write it (awq_lanes.cuh: half_saturated)."""
    return (t.clamp(-FP16_MAX, FP16_MAX) if dtype == torch.float16 else t).to(dtype)


def swiglu_operand(gate_up: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """silu(gate) * up of a GEMM's [M, 2F] outputs in fp32 (fp64 stays fp64), rounded once to the
    next GEMM's x dtype (to_operand): awq_swiglu's output in torch."""
    return to_operand(swiglu_reference(gate_up.to(torch.promote_types(gate_up.dtype, torch.float32))), dtype)


def awq_gemm_reference(x: torch.Tensor, w: AWQWeight | TiledAWQWeight,
                       bias: torch.Tensor | None = None) -> torch.Tensor:
    """x [M, K] @ dequantize(w, x.dtype).T (+ bias), fp32 accumulation, rounded once to
    output_dtype(x's dtype); either layout, any device."""
    return gemm_reference(x, dequantize(w, x.dtype), bias, dtype=output_dtype(x.dtype))


def one_wave_shapes(n: int, k: int, group: int, sms: int) -> list[tuple[tuple[int, int], tuple]]:
    """Every (S, C) that runs an [n, k] weight in groups of `group` in one wave on `sms` SMs, every
    warp with a group, with plan()'s score: the time of the busiest SM, as the groups of its busiest
    warp (plus CLUSTER_COST_GROUPS where C > 1) times its warps, or SATURATING_WARPS where it holds
    fewer; ties go to more SMs busy, then fewer blocks per cluster, then more warps. Lower is
    better. (paper_figures/plan_sweep.py times them all.)"""
    tiles, groups = -(-n // COLUMNS_PER_BLOCK), k // group
    shapes = []
    for cluster in CLUSTERS:
        for splits in SPLITS:
            if cluster * splits > groups:
                continue  # a warp without a group
            grid = tiles * cluster
            per_sm = -(-grid // sms)  # blocks on the busiest SM
            if per_sm > BLOCKS_PER_SM or per_sm * splits > WARPS_PER_SM \
                    or per_sm * (splits * WARP_SHARED_BYTES + 1024) > SHARED_PER_SM:
                continue  # not one wave
            busiest_warp = -(-groups // (cluster * splits)) + (CLUSTER_COST_GROUPS if cluster > 1 else 0)
            shapes.append(((splits, cluster),
                           (busiest_warp * max(per_sm * splits, SATURATING_WARPS), -min(grid, sms), cluster, -splits)))
    return shapes


@functools.cache
def plan(n: int, k: int, group: int, sms: int, clusters: bool = True) -> tuple[int, int]:
    """(S, C) for an [n, k] weight in groups of `group` on a GPU of `sms` SMs: clusters of C blocks of S
    warps on each 64 output columns, the C S warps splitting K's groups (warp s: groups s, s + C S, ..).
    Decided by (n, k, group) and the GPU, never by M: that keeps a row's reduction order, so its
    bits, the same at every M. The best-scored of one_wave_shapes (a C = 1 shape within
    PDL_PREFERENCE of it before clusters; C = 1 only without `clusters`), or (1, 1) where no shape
    fits one wave (N over 64 * 32 * sms): many small blocks."""
    shapes = [shape for shape in one_wave_shapes(n, k, group, sms) if clusters or shape[0][1] == 1]
    if not shapes:
        return (1, 1)
    best = min(shapes, key=lambda shape: shape[1])
    plain = [shape for shape in shapes if shape[0][1] == 1]
    if plain:
        best_plain = min(plain, key=lambda shape: shape[1])
        if best_plain[1][0] <= PDL_PREFERENCE * best[1][0]:
            return best_plain[0]
    return best[0]


def kernel_name(m: int, group: int, cluster: int, op: str = "awq_gemm", f16: bool = False) -> str:
    """The kernel (op awq_gemm or awq_swiglu; f16: fp16 x) for m rows (r8: M <= 8, r16 above), group
    size `group`, clusters of `cluster` blocks."""
    return f"{op}{'_f16' if f16 else ''}_r{8 if m <= 8 else 16}_g{group}_c{cluster}"


def check_operands(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor | None,
                   out_cols: int | None = None) -> None:
    """ValueError unless the operands are what the kernel reads and writes (layout, shapes and dtypes
    first, then alignment, then device); out is [M, N] in bf16, or awq_swiglu's [M, out_cols] in bf16
    or fp16."""
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
    if groups == 0 or k % groups or k // groups not in GROUPS:
        raise ValueError(f"awq_gemm: K = {k} in {groups} groups: the kernel takes groups of "
                         f"{', '.join(map(str, GROUPS))}")
    if tuple(w.qweight.shape) != (blocks, k, 8) or tuple(w.qzeros.shape) != (blocks, groups, 8) \
            or tuple(w.scales.shape) != (blocks, groups, COLUMNS_PER_BLOCK):
        raise ValueError(f"awq_gemm: qzeros {tuple(w.qzeros.shape)} and scales {tuple(w.scales.shape)} do not fit "
                         f"qweight {tuple(w.qweight.shape)}")
    if x.dtype not in OPERAND_DTYPES:
        raise ValueError(f"awq_gemm: x must be bfloat16 or float16 (the fp16-operand kernels), got {x.dtype}")
    tensors = {"x": x, "qweight": w.qweight, "qzeros": w.qzeros, "scales": w.scales}
    dtypes = {"x": x.dtype, "qweight": torch.int32, "qzeros": torch.int32, "scales": torch.float16}
    swiglu_out = out_cols is not None and out is not None and out.dtype in OPERAND_DTYPES
    check_common("awq_gemm", x, m, n, k, tensors, dtypes, bias, out, aligned=("x", "qweight", "qzeros", "scales"),
                 margin=64, out_cols=out_cols, out_dtype=out.dtype if swiglu_out else torch.bfloat16)
    if k > 2**26 or n > 2**27:  # the kernel's x offsets: 16 rows of x in 32 bits
        raise ValueError(f"awq_gemm: [{n}, {k}] does not fit the kernel's 32-bit offsets")


def awq_gemm(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None = None,
             out: torch.Tensor | None = None) -> torch.Tensor:
    """x: [M, K] bf16 or fp16 (the fp16-operand kernel) contiguous, 1 <= M <= 16; w: an [N, K]
    weight's AWQ tensors tiled (awq.tile; group 32, 64 or 128); bias: [N] bf16 or None; out: [M, N]
    bf16 (written) or None (allocated). -> out = x @ W.T + bias, fp32 accumulation, rounded once to bf16."""
    check_operands(x, w, bias, out)
    return run_planned(x, w, bias, out)


def run_planned(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor | None,
                clusters: bool = True, norms: tuple = ()) -> torch.Tensor:
    """awq_gemm on checked operands (awq_norms.awq_gemm_norms: with its epilogue operands, and
    without clusters where it writes the next norm's sums)."""
    if out is None:
        out = torch.empty(x.shape[0], w.n, dtype=torch.bfloat16, device=x.device)
    splits, cluster = plan(w.n, x.shape[1], w.group, _sm_count(x.device.index), clusters=clusters)
    launch_shape(x, w, bias, out, splits, cluster, norms=norms)
    return out


def fuses_swiglu(n: int, k: int, group: int, sms: int) -> bool:
    """Whether awq_swiglu runs an [n = 2F, k] gate_up in one kernel: each gate tile's up tile is
    whole tiles further (F a multiple of 64) and a block holds the plan's S warps twice."""
    return n % (2 * COLUMNS_PER_BLOCK) == 0 and 2 * plan(n, k, group, sms)[0] <= max(SPLITS)


def awq_swiglu(x: torch.Tensor, w: TiledAWQWeight, out: torch.Tensor | None = None) -> torch.Tensor:
    """x: [M, K] bf16 or fp16 as awq_gemm's; w: the MLP's gate_up [2F, K] (gate rows, then up) tiled;
    out: [M, F] bf16 or fp16 (the next GEMM's x), or None (x's dtype). -> silu(gate) * up in fp32 of
    awq_gemm's bf16 outputs, rounded once to out's dtype (bitwise norm.swiglu(awq_gemm(x, w)) for
    bf16): in one kernel where fuses_swiglu (its S warps on a gate tile and S more on the up tile in
    one block), else the GEMM, then SwiGLU."""
    check_operands(x, w, None, out, out_cols=w.n // 2)
    return run_swiglu(x, w, out)


def run_swiglu(x: torch.Tensor, w: TiledAWQWeight, out: torch.Tensor | None, norms: tuple = ()) -> torch.Tensor:
    """awq_swiglu on checked operands (awq_norms.awq_swiglu_norms: with its epilogue operands)."""
    sms = _sm_count(x.device.index)
    if out is None:
        out = torch.empty(x.shape[0], w.n // 2, dtype=x.dtype, device=x.device)
    if not fuses_swiglu(w.n, x.shape[1], w.group, sms):
        gate_up = run_planned(x, w, None, None, norms=norms)
        if out.dtype == torch.bfloat16:
            return swiglu(gate_up, out=out)
        return out.copy_(swiglu_operand(gate_up, out.dtype))  # silu in torch: not bitwise the fused
    splits, cluster = plan(w.n, x.shape[1], w.group, sms)
    launch_shape(x, w, None, out, splits, cluster, op="awq_swiglu", norms=norms)
    return out


def kernel_args(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor,
                norms: tuple = ()) -> tuple:
    """The AWQ kernels' arguments in awq_gemm.cu's order (AWQ_GEMM_KERNEL), for checked operands and
    norms as launch_shape takes them (awq_fp16_probe.py launches other builds of the kernels with
    them)."""
    (m, k), n = x.shape, w.n
    *tensors, eps, x_unit, next_x_scale = norms or (None,) * 5 + (0.0, 1.0, 1.0)
    next_x = tensors[3]  # tensors: row_sums, residual, next_norm, next_x, next_sums
    half_out = (HALF_OUT if out.dtype == torch.float16 else 0) | \
        (HALF_NEXT_X if next_x is not None and next_x.dtype == torch.float16 else 0)
    return (ptr(x), ptr(w.qweight), ptr(w.qzeros), ptr(w.scales), np.uint64(0) if bias is None else ptr(bias),
            ptr(out), np.int32(m), np.int32(n), np.int32(k),
            *(np.uint64(0) if t is None else ptr(t) for t in tensors), np.float32(eps), np.float32(x_unit),
            np.float32(next_x_scale), np.int32(half_out))


def launch_shape(x: torch.Tensor, w: TiledAWQWeight, bias: torch.Tensor | None, out: torch.Tensor, splits: int,
                 cluster: int, op: str = "awq_gemm", norms: tuple = ()) -> None:
    """Launch the kernel on checked operands in clusters of `cluster` blocks of `splits` warps a tile (awq_gemm
    takes them from plan(); the GPU tests run every shape). awq_swiglu: a block holds a gate tile's
    and its up tile's warps, so half the blocks of twice the warps. norms: awq_norms.py's epilogue
    operands (row_sums, residual, next_norm, next_x, next_sums: tensors or None; eps, x_unit,
    next_x_scale: floats), () for none."""
    m = x.shape[0]
    tiles_a_block = 2 if op == "awq_swiglu" else 1
    name = kernel_name(m, w.group, cluster, op, f16=x.dtype == torch.float16)
    with torch.cuda.device(x.device):
        launch("awq_gemm", name, (w.qweight.shape[0] // tiles_a_block * cluster,), (32 * splits * tiles_a_block,),
               kernel_args(x, w, bias, out, norms), shared_mem=tiles_a_block * splits * warp_shared_bytes(m),
               # Clusters without PDL: launched while the previous call drains, the SMs that free up
               # first took more of their blocks than the plan counts (70B o / down at M = 8 in the
               # A/B: 17.5 / 42.2 us without, 18.5 / 51.6 with; NOTES v37, v38).
               pdl=cluster == 1)
