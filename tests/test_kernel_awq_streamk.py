"""The stream-K AWQ GEMM (cuda/awq_streamk.cu; awq_gemm.py's launch_streamk and prefers_streamk): on
CPU, where it runs and the shared memory it takes; on GPU (outputs poisoned first), close to the
reference on the shapes it runs and on small ones cut across many blocks (tiles split over up to
six blocks, warps crossing tiles), rows bitwise invariant, repeated calls and graph replays
bitwise the first (the flags clear), awq_swiglu bitwise SwiGLU of the stream-K GEMM of the same
units, and the norm epilogues (residual, next norm, row sums) bitwise those of its plain output."""
from __future__ import annotations

import pytest
import torch

from swiftspec_core.kernels import awq_norms, norm
from swiftspec_core.kernels.awq_gemm import (MAX_ROWS, SHARED_PER_SM, STREAMK_SPLITS, launch_streamk,
                                             prefers_streamk, streamk_shared_bytes, streamk_slots)
from swiftspec_core.models import awq
from kernel_checks import assert_rows_bitwise_invariant, gate_then_up, pairs_in_order, replay_on
from swiftspec_core.graphs import capture
from test_kernel_awq_gemm import (DTYPES, H200_SMS, MODEL_LAYERS, activations, check_close, needs_gpu,
                                  packed_layer)
from test_kernel_gemm import check_bitwise

# name: ([N, K], G, blocks, warps a block, swiglu); blocks None: one an SM (the runtime's launch).
SHAPES = {
    "70b-qkv": ((10240, 8192), 128, None, STREAMK_SPLITS, False),
    "70b-tp2-qkv": ((5120, 8192), 128, None, STREAMK_SPLITS, False),
    "8b-tp2-down": ((4096, 7168), 128, None, STREAMK_SPLITS, False),
    "cut-odd": ((1000, 1024), 128, 7, 3, False),  # N % 64 != 0; 16 tiles of 8 groups, 6.1 units a warp: 13 cross a tile
    "cut-5": ((512, 2048), 32, 40, 2, False),  # 8 tiles of 64 groups, 12.8 units a block: a tile over 5-6 blocks
    "cut-g64": ((2080, 640), 64, 30, 2, False),  # 33 tiles of 10 groups, 11 units a block
    "swiglu-70b": ((57344, 8192), 128, None, STREAMK_SPLITS, True),
    "swiglu-cut": ((768, 512), 64, 7, 3, True),  # 6 pairs of 8-group tiles on 21 warps: 9 cross a tile
}


def test_streamk_runs_where_plans_leave_sms_uneven():
    # The 70B TP 1 qkv (160 tiles) and gate_up (448 blocks) take it; its o and down (128 tiles) do not.
    (qkv, gate_up, o, down) = (MODEL_LAYERS[f"3-70b-tp1-{p}"] for p in ("qkv", "gate_up", "o", "down"))
    assert prefers_streamk(*qkv, 128, H200_SMS) and prefers_streamk(*gate_up, 128, H200_SMS, swiglu=True)
    assert not prefers_streamk(*o, 128, H200_SMS) and not prefers_streamk(*down, 128, H200_SMS)
    for (n, k), group, blocks, splits, swiglu in SHAPES.values():
        slots = streamk_slots(n, k, group, blocks or H200_SMS, splits, swiglu)
        assert slots is not None and streamk_shared_bytes(MAX_ROWS, splits, slots) + 1024 <= SHARED_PER_SM
    assert streamk_slots(64 * 10, 128, 128, 132, 20) is None  # fewer units than warps
    assert streamk_slots(192, 8192, 128, 2, 1, swiglu=True) is None  # a gate tile without its up tile
    assert streamk_slots(640, 256, 128, 1, 2) is None  # 10 units a warp over 2-group tiles: many boundaries


_weights: dict = {}


def weight(name: str) -> awq.TiledAWQWeight:
    if name not in _weights:
        _weights.clear()
        (n, k), group, *_ = SHAPES[name]
        _weights[name] = awq.tile(packed_layer(n, k, group, "cuda", seed=n + k))
    return _weights[name]


def streamk(name: str, x: torch.Tensor, w: awq.TiledAWQWeight, bias=None, op: str = "awq_gemm",
            norms: tuple = (), out: torch.Tensor | None = None) -> torch.Tensor:
    """The stream-K kernel at SHAPES[name]'s launch, into out (None: a poisoned [M, N or N / 2])."""
    _, _, blocks, splits, _ = SHAPES[name]
    if out is None:
        cols = w.n // 2 if op == "awq_swiglu" else w.n
        out = torch.full((x.shape[0], cols), float("nan"), dtype=torch.bfloat16, device=x.device)
    launch_streamk(x, w, bias, out, op=op, norms=norms, blocks=blocks, splits=splits)
    return out


@needs_gpu
@DTYPES
@pytest.mark.parametrize("name", [n for n, s in SHAPES.items() if not s[4]])
def test_streamk_matches_reference(name, dtype):
    w = weight(name)
    n, k = w.shape
    bias = torch.randn(n, device="cuda").to(torch.bfloat16) if name.startswith("cut") else None
    for m in (1, 8, 9, 16):
        x = activations(m, k, "cuda", seed=100 + m, dtype=dtype)
        check_close(streamk(name, x, w, bias), x, w, bias, f"stream-K {name} [{n}, {k}] G={w.group} M={m} x {dtype}")


@needs_gpu
@pytest.mark.parametrize("name", ["70b-qkv", "cut-odd", "cut-5"])
def test_streamk_rows_are_bitwise_invariant(name):
    w = weight(name)
    k = w.shape[1]
    assert_rows_bitwise_invariant(f"stream-K {name}", activations(16, k, "cuda", seed=300),
                                  lambda rows: streamk(name, rows, w), lambda m, seed: activations(m, k, "cuda", seed),
                                  check_bitwise)


@needs_gpu
@pytest.mark.parametrize("name", ["70b-qkv", "cut-5"])
def test_streamk_repeats_and_replays_bitwise(name):
    # Each launch clears the flags it read: a second call, and graph replays, wait for their own.
    w = weight(name)
    (n, k), m = w.shape, 8
    x = torch.zeros(m, k, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    graph, _ = capture(lambda: streamk(name, x, w, out=out), warmups=1)
    for seed in (500, 501):
        fresh = activations(m, k, "cuda", seed)
        first = streamk(name, fresh, w)
        for repeat in range(3):
            check_bitwise(streamk(name, fresh, w), first, f"stream-K {name}: call {repeat + 2} vs the first")
        check_bitwise(replay_on(graph, x, out, fresh), first, f"stream-K {name}: graph replay vs eager, seed {seed}")


@needs_gpu
@DTYPES
@pytest.mark.parametrize("name", ["swiglu-70b", "swiglu-cut"])
def test_streamk_swiglu_is_bitwise_swiglu_of_its_gemm(name, dtype):
    w = weight(name)
    k = w.shape[1]
    paired = pairs_in_order(w)
    for m in (1, 8, 9, 16):
        x = activations(m, k, "cuda", seed=800 + m, dtype=dtype)
        out = streamk(name, x, w, op="awq_swiglu")  # bf16 out: bitwise norm.swiglu of the bf16 sums
        sums = gate_then_up(streamk(name, x, paired))
        check_close(sums, x, w, None, f"stream-K {name} gate_up sums M={m} x {dtype}")
        check_bitwise(out, norm.swiglu(sums), f"stream-K swiglu {name} M={m} x {dtype} vs SwiGLU of its GEMM")
    if name == "swiglu-70b":
        assert prefers_streamk(w.n, k, w.group, torch.cuda.get_device_properties(0).multi_processor_count, swiglu=True)
        from swiftspec_core.kernels.awq_gemm import awq_swiglu
        x = activations(8, k, "cuda", seed=808, dtype=dtype)
        check_bitwise(awq_swiglu(x, w, out=torch.empty(8, w.n // 2, dtype=torch.bfloat16, device="cuda")),
                      streamk(name, x, w, op="awq_swiglu"), "awq_swiglu runs stream-K on the 70B gate_up")


@needs_gpu
@pytest.mark.parametrize("name", ["8b-tp2-down", "cut-odd"])
def test_streamk_norm_epilogues_are_bitwise_its_plain_output(name):
    """A producer's epilogue (residual, the next norm's x and sums) and a consumer's (row sums):
    out = bf16(residual + plain), next x = plain's rounding of out g, sums close to the reference;
    r from the row sums scales the plain sums before their one rounding (close to the reference)."""
    w = weight(name)
    (n, k), m = w.shape, 9
    gen = torch.Generator(device="cuda").manual_seed(n)
    x = activations(m, k, "cuda", seed=900)
    h = torch.randn(m, n, generator=gen, device="cuda").to(torch.bfloat16)
    g = (torch.rand(n, generator=gen, device="cuda") + 0.5).to(torch.bfloat16)
    plain = streamk(name, x, w)
    if n % 64 == 0:
        nxt = awq_norms.NextNorm(g, torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda"),
                                 torch.full((n // 64, 16), float("nan"), device="cuda"))
        got = streamk(name, x, w, norms=awq_norms._operands(None, h, nxt, 0.0, 1.0), out=h.clone())
        check_bitwise(got, (h.float() + plain.float()).to(torch.bfloat16), f"stream-K {name}: residual epilogue")
        check_bitwise(nxt.x, (got.float() * g.float()).to(torch.bfloat16), f"stream-K {name}: next norm's x")
        want = (got.float() ** 2).view(m, n // 64, 64).sum(-1).T
        torch.testing.assert_close(nxt.sums[:, :m], want, rtol=1e-5, atol=1e-5)
    sums = torch.rand(k // 64, 16, generator=gen, device="cuda") * k
    got = streamk(name, x, w, norms=awq_norms._operands(sums, None, None, 1e-5, 1.0))
    want = awq_norms.awq_gemm_norms_reference(x, w, row_sums=sums, eps=1e-5)
    assert not got.isnan().any() and (got.float() - want.float()).abs().max() <= 2e-2 * want.float().abs().max()
