"""plan() of the AWQ GEMM (swiftspec_core/kernels/awq_gemm.py) and the constants it shares with
cuda/awq_gemm.cu, on CPU: the kernels built, their arguments, the shared memory a warp takes, every
planned launch fitting one wave, the targets' gate_up fused with SwiGLU, and plan() within 10% of the fastest
shape of a measured sweep."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from swiftspec_core.kernels.awq_gemm import (ACCUMULATOR_BYTES, ACCUMULATOR_BYTES_R8, BLOCKS_PER_SM, CLUSTERS,
                                             GROUPS, META_BYTES, SHARED_PER_SM, SPLITS, STAGE_BYTES, STAGES,
                                             WARPS_PER_SM, WARP_SHARED_BYTES, fuses_swiglu, kernel_args, kernel_name,
                                             plan)
from swiftspec_core.models import awq
from swiftspec_core.kernels import build
from swiftspec_core.kernels.build import CUDA_DIR
from test_kernel_awq_gemm import H200_SMS, LAYERS, MODEL_LAYERS, ODD


def test_constants_match_the_kernel():
    source = build.source("awq_gemm")  # its headers inlined (the block and its defines: awq_gemm_block.cuh)
    built = re.findall(r"^AWQ_GEMM_OPS\((\d+)\)$", source, re.MULTILINE)
    assert sorted(int(g) for g in built) == sorted(GROUPS)
    ops = re.findall(r"^  AWQ_GEMM_ROWS\((\w+), (\w+), (\w+), G\)", source, re.MULTILINE)
    assert ops == [(kernel_name(8, 128, 1, op, f16).removesuffix("_r8_g128_c1"), swiglu, str(f16).lower())
                   for op, swiglu in (("awq_gemm", "false"), ("awq_swiglu", "true")) for f16 in (False, True)]
    rows = re.findall(r"^  AWQ_GEMM_CLUSTERS\(NAME, SWIGLU, F16, (\d+), (\w+), G\)", source, re.MULTILINE)
    assert rows == [("8", "false"), ("16", "true")]
    clusters = re.findall(r"^  AWQ_GEMM_KERNEL\(NAME, SWIGLU, F16, ROWS, TWO, G, (\d+), (.*)\)", source, re.MULTILINE)
    assert [int(c) for c, _ in clusters] == list(CLUSTERS)
    for c, attributes in clusters:
        assert attributes.rstrip(" \\") == ("" if c == "1" else f"__cluster_dims__({c}, 1, 1)")
    defines = {name: int(v) for name, v in re.findall(r"^#define (AWQ_\w+) (\d+)", source, re.MULTILINE)}
    assert defines == {"AWQ_STAGES": STAGES, "AWQ_STAGE_BYTES": STAGE_BYTES, "AWQ_META_BYTES": META_BYTES,
                       "AWQ_THREADS": 32 * max(SPLITS)}
    assert "#define AWQ_RING_BYTES (AWQ_STAGES * (AWQ_STAGE_BYTES + AWQ_META_BYTES))" in source
    assert META_BYTES == 64 * 2 + 8 * 4  # a group's fp16 scales and int32 zeros of one tile
    assert STAGES & (STAGES - 1) == 0 and STAGE_BYTES == 32 * 32  # a chunk's 32 rows of 32 bytes, no padding
    # 80 registers a lane at most (65536 / AWQ_THREADS, in multiples of 8) is what WARPS_PER_SM counts on.
    assert (65536 // (32 * max(SPLITS))) // 8 * 8 * 32 * WARPS_PER_SM <= 65536
    assert kernel_name(8, 128, 1) == "awq_gemm_r8_g128_c1" and kernel_name(9, 32, 8) == "awq_gemm_r16_g32_c8"
    assert kernel_name(16, 64, 2, "awq_swiglu") == "awq_swiglu_r16_g64_c2"
    assert kernel_name(8, 128, 1, "awq_swiglu", f16=True) == "awq_swiglu_f16_r8_g128_c1"


@pytest.mark.parametrize("norms", [False, True])
def test_kernel_args_match_the_kernels_parameters(norms):
    # One argument list (kernel_args) for the runtime's launches and the probes' other builds: a
    # probe that wrote its own passed 16 arguments to the kernels' 18 for a week (NOTES v242).
    source = build.source("awq_gemm")
    params = re.search(r"NAME##_r##ROWS##_g##G##_c##C\(((?:.|\n)*?)\) \{", source).group(1)
    types = [re.sub(r"\s+", " ", p.replace("\\", "")).strip().rsplit(" ", 1)[0] for p in params.split(",")]
    expected = [np.uint64 if t.endswith("*") or "* __restrict__" in t else {"int": np.int32, "float": np.float32}[t]
                for t in types]
    w = awq.tile(awq.quantize(torch.randn(128, 256)))
    x, out = torch.randn(8, 256).to(torch.bfloat16), torch.empty(8, 128, dtype=torch.bfloat16)
    epilogue = (torch.zeros(4, 16), None, torch.ones(128).to(torch.bfloat16), torch.empty(8, 128).half(),
                torch.zeros(2, 16), 1e-5, 0.5, 2.0) if norms else ()
    args = kernel_args(x, w, None, out, epilogue)
    assert [type(a) for a in args] == expected, (types, [type(a) for a in args])
    assert args[6:9] == (8, 128, 256) and args[-1] == (2 if norms else 0)  # M, N, K; half_out: fp16 next x


@pytest.mark.parametrize("splits", SPLITS)
def test_shared_memory_fits(splits):
    # The rings then the accumulators; after the loop a cluster's [32][32] block sums fit the rings;
    # within the 227 KB a block may opt in to.
    # awq_swiglu's block sums are [2][32][32] in the rings of its 2 S warps. The r8 kernels keep
    # half the accumulators (cuda's Accumulators: 4 pieces a lane, not 8).
    assert WARP_SHARED_BYTES == STAGES * (STAGE_BYTES + META_BYTES) + ACCUMULATOR_BYTES
    assert ACCUMULATOR_BYTES == 32 * 32 * 4 and splits * STAGES * STAGE_BYTES >= 32 * 32 * 4
    assert ACCUMULATOR_BYTES_R8 == 32 * 4 * 4 * 4
    assert "static constexpr int kPieces = kTwo ? 8 : 4;" in (CUDA_DIR / "awq_gemm_block.cuh").read_text()
    assert splits * STAGES * STAGE_BYTES >= 16 * 64 * 2  # awq_gemm_allreduce's bf16 tile [16][64] in the rings
    assert splits * WARP_SHARED_BYTES <= 227 * 1024


@pytest.mark.parametrize("n,k,group", [(n, k, 128) for n, k in MODEL_LAYERS.values()] + [
    (n, k, 128) for n, k in LAYERS.values()] + [shape_group for shape_group in
                                              ((n, k, g) for (n, k), g in ODD.values())] + [(152064, 8192, 128)])
def test_plan_fits_the_kernel(n, k, group):
    splits, cluster = plan(n, k, group, H200_SMS)
    assert splits in SPLITS and cluster in CLUSTERS
    assert splits * cluster <= max(1, k // group)  # every warp has a group
    per_sm = -(-(-(-n // 64) * cluster) // H200_SMS)  # one wave: every block resident at once
    fits = per_sm <= BLOCKS_PER_SM and per_sm * splits <= WARPS_PER_SM \
        and per_sm * (splits * WARP_SHARED_BYTES + 1024) <= SHARED_PER_SM
    assert fits or (splits, cluster) == (1, 1)


def test_swiglu_fuses_the_targets_gate_up():
    # The AWQ targets' gate_up (70B and 8B, TP 1 and 2) take the one-kernel path: F a multiple of 64
    # and 2 S warps a block. Not so an F off the tiles (72), nor a plan of more than 12 warps a tile
    # (3.2-3B at TP 2: 24), which run the GEMM and the swiglu kernel.
    for model in ("3-70b", "3-8b"):
        for tp in (1, 2):
            assert fuses_swiglu(*MODEL_LAYERS[f"{model}-tp{tp}-gate_up"], 128, H200_SMS), (model, tp)
    assert not fuses_swiglu(2 * 72, 256, 64, H200_SMS)
    n, k = MODEL_LAYERS["3.2-3b-tp2-gate_up"]
    assert n % 128 == 0 and plan(n, k, 128, H200_SMS)[0] > 12 and not fuses_swiglu(n, k, 128, H200_SMS)


SWEEP = Path(__file__).resolve().parents[1] / "paper_figures/results/2026-12-01-h200-session9/c4"


@pytest.mark.parametrize("csv", ["sweep-70b.csv", "sweep-8b.csv"])
def test_plan_picks_a_fast_measured_shape(csv):
    """plan()'s score is fitted to every one-wave shape of the Llama-3-70B (TP 1, 2) and 8B layers,
    timed at M = 8 on an H200 (NOTES v40): on each, plan() picks a shape within 10% of the fastest
    (its old score: up to 1.76x), and the 70B gate_up keeps (3, 1)."""
    import pandas as pd

    sweep = pd.read_csv(SWEEP / csv)
    for (model, tp, op), timed in sweep.groupby(["model", "tp", "op"]):
        n, k = int(timed.n.iloc[0]), int(timed.k.iloc[0])
        splits, cluster = plan(n, k, 128, H200_SMS)
        chosen = timed[(timed.splits == splits) & (timed.cluster == cluster)]
        assert len(chosen) == 1, (model, tp, op, (splits, cluster))  # a shape the sweep timed
        assert chosen.us.iloc[0] <= 1.10 * timed.us.min(), (model, tp, op, (splits, cluster), chosen.us.iloc[0],
                                                             timed.us.min())
    assert plan(57344, 8192, 128, H200_SMS) == (3, 1)


def test_plain_blocks_within_pdl_preference_come_before_clusters():
    """Clusters launch without PDL: a C = 1 shape within PDL_PREFERENCE of the best score wins (the
    70B TP 1 qkv: (11, 1) over (4, 4), 1.10 of its score; NOTES v108), one further off does not (the
    70B TP 8 qkv keeps (8, 8), 1.22)."""
    from swiftspec_core.kernels.awq_gemm import PDL_PREFERENCE, one_wave_shapes

    for (n, k), want, ratio in (((10240, 8192), (11, 1), 1.10), ((1280, 8192), (8, 8), 1.22)):
        shapes = one_wave_shapes(n, k, 128, H200_SMS)
        best = min(shapes, key=lambda shape: shape[1])
        plain = min((shape for shape in shapes if shape[0][1] == 1), key=lambda shape: shape[1])
        assert round(plain[1][0] / best[1][0], 2) == ratio and best[0][1] > 1
        assert plan(n, k, 128, H200_SMS) == want and (want[1] == 1) == (ratio <= PDL_PREFERENCE)
