"""gemm_swiglu (cuda/gemm_swiglu.cu, swiftspec_core/kernels/gemm_epilogue.py): the gate_up GEMM with
SwiGLU in its epilogue. CPU: its reference against float64, the intermediate rounding it shares
with the unfused path, the input checks, the kernel table against gemm's plan. GPU: bitwise equal
to swiglu(gemm(x, w_gate_up)) on every Llama / Qwen gate_up shape at TP1 and TP2, close to the
reference on odd shapes, rows bitwise invariant, graph replay bitwise eager."""
from __future__ import annotations

import re

import pytest
import torch

from kernel_checks import assert_rows_bitwise_invariant, replay_on
from swiftspec_core.graphs import capture
from swiftspec_core.kernels.build import CUDA_DIR
from swiftspec_core.kernels.gemm import UNROLL, gemm, plan
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu, gemm_swiglu_reference, swiglu_tiles
from swiftspec_core.kernels.norm import swiglu
from test_kernel_gemm import check_bitwise, check_close, misaligned, operands

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# w_gate_up [2F, K] of one rank: Llama-3.2-1B / 3.2-3B / 3-8B / 3-70B and Qwen2.5-0.5B / 1.5B, at
# TP1 and TP2 (F sharded).
GATE_UP = {
    "1b": (16384, 2048), "1b-tp2": (8192, 2048), "3b": (16384, 3072), "3b-tp2": (8192, 3072),
    "8b": (28672, 4096), "8b-tp2": (14336, 4096), "70b": (57344, 8192), "70b-tp2": (28672, 8192),
    "qwen0.5b": (9728, 896), "qwen0.5b-tp2": (4864, 896), "qwen1.5b": (17920, 1536),
    "qwen1.5b-tp2": (8960, 1536),
}
# F not a multiple of 8 (norm.swiglu does not take these), K not a multiple of 32, gemm plans of
# nt = 1 and 2 (so gemm_swiglu_nt2 with one gate and one up tile), 16 warps splitting K.
ODD = {"odd-1": (154, 40), "odd-2": (2006, 1544), "odd-3": (16, 4104), "odd-4": (4106, 2056), "odd-5": (1000, 520)}


# --- CPU: the reference and the checks ---------------------------------------------------------

@pytest.mark.parametrize("m,two_f,k", [(1, 64, 128), (7, 600, 520), (16, 258, 4096)])
def test_reference_matches_float64(m, two_f, k):
    x, w, _ = operands(two_f, k, m, False, "cpu", seed=m)
    got = gemm_swiglu_reference(x, w)
    # float64 throughout, with the one rounding the op has by definition: gate and up are gemm's
    # bf16 outputs.
    gate_up = (x.double() @ w.double().T).to(torch.bfloat16).double()
    gate, up = gate_up.chunk(2, dim=-1)
    exact = gate * torch.sigmoid(gate) * up
    assert got.dtype == torch.bfloat16 and got.shape == (m, two_f // 2)
    err = (got.double() - exact).abs()
    # One bf16 rounding of the result (2^-8 relative) and fp32's error in silu; where fp32
    # accumulation and float64 round gate or up differently (a tie), one bf16 ulp of that factor.
    assert (err <= exact.abs() * 2 ** -7 + 1e-4).all(), f"max error {err.max():.3g}"
    same = (got == exact.to(torch.bfloat16)).double().mean().item()
    assert same >= 0.97, f"only {same:.3f} of the elements equal float64 rounded once"


def test_reference_rounds_gate_and_up_as_gemm_writes_them():
    # gate = 1 + 2^-9 in fp32, which gemm writes as bf16 1.0: silu(1) * 1 = 0.7311 -> 0.73046875,
    # where silu(1 + 2^-9) * 1 = 0.7329 would round to 0.734375.
    x = torch.tensor([[1.0, 1.0]], dtype=torch.bfloat16)
    w = torch.tensor([[1.0, 2 ** -9], [1.0, 0.0]], dtype=torch.bfloat16)  # [gate row; up row]
    assert gemm_swiglu_reference(x, w).item() == 0.73046875
    unrounded = torch.nn.functional.silu(x.float() @ w.float().T[:, :1]) * 1.0
    assert unrounded.to(torch.bfloat16).item() == 0.734375  # the case does tell the two apart


def _bf(*shape):
    return torch.zeros(*shape, dtype=torch.bfloat16)


# case: (x, w_gate_up, out) in place of the good x [4, 64], w [32, 64], out None; the message expected.
BAD = {
    "rows": ((_bf(17, 64), _bf(32, 64), None), "1..16"),
    "odd-n": ((_bf(4, 64), _bf(33, 64), None), "2F"),
    "k8": ((_bf(4, 60), _bf(32, 60), None), "multiple of 8"),
    "k-mismatch": ((_bf(4, 64), _bf(32, 72), None), "do not match"),
    "dtype": ((torch.zeros(4, 64), _bf(32, 64), None), "bfloat16"),
    "3d": ((_bf(4, 64), _bf(1, 32, 64), None), "2-D"),
    # [M, 2F], the unfused gate_up's shape, where the fused op writes [M, F]
    "out-shape": ((_bf(4, 64), _bf(32, 64), _bf(4, 32)), r"out must be \[4, 16\]"),
    "out-dtype": ((_bf(4, 64), _bf(32, 64), torch.zeros(4, 16)), "bfloat16"),
    "strided": ((_bf(4, 64), _bf(64, 32).T, None), "contiguous"),
    "misaligned": ((_bf(4, 64), misaligned(32, 64), None), "16-byte aligned"),
    "cpu": ((_bf(4, 64), _bf(32, 64), None), "CUDA device"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_operands_raise(case):
    operands_, pattern = BAD[case]
    with pytest.raises(ValueError, match=pattern):
        gemm_swiglu(*operands_)


def test_kernel_table_covers_gemms_plans():
    kernels = re.findall(r"^GEMM_SWIGLU_KERNEL\((\d+), (\d+), \d+\)", (CUDA_DIR / "gemm_swiglu.cu").read_text(),
                         re.MULTILINE)
    table = {int(nt): int(u) for nt, u in kernels}
    for nt in UNROLL:  # every tile count gemm's plan can give has its fused kernel, with gemm's unroll
        tiles = swiglu_tiles(nt)
        assert tiles % 2 == 0 and tiles in table and table[tiles] == UNROLL[tiles]
    for two_f, k in list(GATE_UP.values()) + list(ODD.values()):
        nt, splits = plan(two_f, k, 132)
        assert splits * swiglu_tiles(nt) * 4 * 32 * 4 <= 48 * 1024  # the combine's shared memory


# --- GPU: the kernel ---------------------------------------------------------------------------

_weights: dict = {}


def weight(name: str) -> torch.Tensor:
    """One w_gate_up per name for the whole module (the 70B one is 0.9 GB)."""
    if name not in _weights:
        _weights.clear()
        two_f, k = {**GATE_UP, **ODD}[name]
        _weights[name] = operands(two_f, k, 1, False, "cuda", seed=len(name))[1]
    return _weights[name]


def run_poisoned(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = torch.full((x.shape[0], w.shape[0] // 2), float("nan"), dtype=torch.bfloat16, device=x.device)
    assert gemm_swiglu(x, w, out=out) is out
    return out


@needs_gpu
@pytest.mark.parametrize("name", list(GATE_UP))
def test_bitwise_equal_to_gemm_then_swiglu(name):
    w = weight(name)
    nt, splits = plan(*w.shape, torch.cuda.get_device_properties(0).multi_processor_count)
    for m in (1, 8, 9, 16):
        x, _, _ = operands(1, w.shape[1], m, False, "cuda", seed=600 + m)
        label = f"gate_up {name} {tuple(w.shape)} M={m} nt={nt} S={splits}"
        got = run_poisoned(x, w)
        check_bitwise(got, swiglu(gemm(x, w)), f"{label}: fused vs swiglu(gemm)")
        # bf16 tolerance as test_kernel_gemm's check_close: 1e-2 max|ref| (one ulp where the fp32
        # sums straddle a rounding boundary, here of gate or up), >= 90% bitwise equal.
        check_close(got, gemm_swiglu_reference(x, w), f"{label}: fused vs reference")


@needs_gpu
@pytest.mark.parametrize("name", list(ODD))
def test_odd_shapes_match_reference(name):
    w = weight(name)
    for m in (1, 5, 9, 16):
        x, _, _ = operands(1, w.shape[1], m, False, "cuda", seed=700 + m)
        got = run_poisoned(x, w)
        check_close(got, gemm_swiglu_reference(x, w), f"gate_up {name} {tuple(w.shape)} M={m}")
        if (w.shape[0] // 2) % 8 == 0:  # norm.swiglu takes it
            check_bitwise(got, swiglu(gemm(x, w)), f"gate_up {name} M={m}: fused vs swiglu(gemm)")
    assert torch.equal(gemm_swiglu(x, w), run_poisoned(x, w))  # allocated out == given out


@needs_gpu
@pytest.mark.parametrize("name", ["1b-tp2", "8b", "qwen0.5b-tp2", "odd-2", "odd-3"])
def test_rows_are_bitwise_invariant(name):
    w = weight(name)
    k = w.shape[1]
    x, _, _ = operands(1, k, 16, False, "cuda", seed=800)
    assert_rows_bitwise_invariant(f"gemm_swiglu {name}", x, lambda rows: run_poisoned(rows, w),
                                  lambda m, seed: operands(1, k, m, False, "cuda", seed=seed)[0], check_bitwise)


@needs_gpu
@pytest.mark.parametrize("name", ["8b-tp2", "odd-1"])
def test_graph_replay_is_bitwise_eager(name):
    w = weight(name)
    m, k = 8, w.shape[1]
    x = torch.zeros(m, k, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(m, w.shape[0] // 2, dtype=torch.bfloat16, device="cuda")
    graph, _ = capture(lambda: gemm_swiglu(x, w, out=out), warmups=1)
    for seed in (900, 901, 902):
        fresh, _, _ = operands(1, k, m, False, "cuda", seed=seed)
        check_bitwise(replay_on(graph, x, out, fresh), gemm_swiglu(fresh, w), f"{name}: graph replay vs eager, seed {seed}")
        check_close(out, gemm_swiglu_reference(fresh, w), f"{name}: graph replay vs reference")
