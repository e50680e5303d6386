"""The GEMMs with the RMSNorm before them and the residual add after them folded in (gemm's norm=
and residual=, gemm_swiglu's norm=; cuda/gemm_tile.cuh): one GPU's fused forward runs every norm and
residual add this way. CPU: the references against float64 and torch's add, the input checks. GPU:
each against its reference on the Llama / Qwen shapes that follow a norm and on odd ones (output
poisoned first), rows bitwise invariant, the residual add bitwise torch's, in place too, and
gemm_swiglu with the norm bitwise swiglu(gemm with the norm)."""
from __future__ import annotations

import pytest
import torch

from kernel_checks import assert_rows_bitwise_invariant
from swiftspec_core.kernels.gemm import gemm, gemm_reference, plan
from swiftspec_core.kernels.gemm_epilogue import gemm_swiglu, gemm_swiglu_reference
from swiftspec_core.kernels.norm import rmsnorm_reference, swiglu
from test_kernel_gemm import LAYERS, ODD, check_bitwise, check_close, layer, operands
from test_kernel_gemm_swiglu import weight

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
EPS = 1e-5

# test_kernel_gemm's weights of the projections after a norm (qkv, lm_head; gate_up as a plain GEMM)
# and odd shapes (K not a multiple of 32, tiny N, 16 warps splitting K in the plain plan, capped at
# 8 with the norm); test_kernel_gemm_swiglu's w_gate_up.
SHAPES = {**LAYERS, **ODD}
NAMES = ["8b-qkv", "1b-qkv", "1b-lm_head", "qwen1.5b-qkv", "8b-gate_up", "odd-2", "odd-3", "odd-4"]
GATE_UP = ["1b", "8b", "odd-2"]


def norm_weight(k: int, device: str, seed: int) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed)
    return (1 + 0.2 * torch.randn(k, generator=g, device=device)).to(torch.bfloat16)


# --- CPU: the references and the checks ----------------------------------------------------------

@pytest.mark.parametrize("m,n,k", [(1, 64, 128), (7, 300, 520), (16, 129, 4096)])
def test_norm_reference_matches_float64(m, n, k):
    x, w, b = operands(n, k, m, True, "cpu", seed=m)
    x = x * 3  # away from rms 1, so a missing scale shows
    g = norm_weight(k, "cpu", seed=k)
    got = gemm_reference(x, w, b, norm=(g, EPS)).double()
    x64 = x.double()
    want = (x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + EPS) * g.double()) @ w.double().T + b.double()
    # bf16(x * g) (2^-9 relative an element) and the output's rounding: ~2^-8 of the norm at most.
    assert (got - want).norm() <= 2 ** -7 * want.norm()
    unfused = gemm_reference(rmsnorm_reference(x, g, EPS), w, b).double()  # the norm kernel, then the GEMM
    assert (got - unfused).norm() <= 2 ** -7 * want.norm()


def test_residual_reference_is_torch_add():
    x, w, b = operands(96, 64, 5, True, "cpu", seed=1)
    r = torch.randn(5, 96).to(torch.bfloat16)
    assert torch.equal(gemm_reference(x, w, b, residual=r), r + gemm_reference(x, w, b))
    out = r.clone()
    assert gemm_reference(x, w, b, out=out, residual=out) is out and torch.equal(out, r + gemm_reference(x, w, b))


@pytest.mark.parametrize("case,pattern", [("norm-shape", "norm weight must be"), ("norm-dtype", "bfloat16"),
                                          ("eps", "eps must be positive"), ("residual-shape", "residual must be"),
                                          ("residual-dtype", "bfloat16"), ("swiglu-norm-shape", "norm weight must be")])
def test_bad_norm_and_residual_operands_raise(case, pattern):
    bf = torch.bfloat16
    x, w = torch.zeros(4, 64, dtype=bf), torch.zeros(32, 64, dtype=bf)
    norm, residual = (torch.ones(64, dtype=bf), EPS), None
    if case == "norm-shape":
        norm = (torch.ones(32, dtype=bf), EPS)
    elif case == "norm-dtype":
        norm = (torch.ones(64), EPS)
    elif case == "eps":
        norm = (torch.ones(64, dtype=bf), 0.0)
    elif case == "residual-shape":
        residual = torch.zeros(4, 31, dtype=bf)
    elif case == "residual-dtype":
        residual = torch.zeros(4, 32)
    with pytest.raises(ValueError, match=pattern):
        if case == "swiglu-norm-shape":
            gemm_swiglu(x, w, norm=(torch.ones(63, dtype=bf), EPS))
        else:
            gemm(x, w, norm=norm, residual=residual)


# --- GPU: the kernels ----------------------------------------------------------------------------

def normed_layer(name: str):
    """test_kernel_gemm's [N, K] weight and bias of `name`, and norm weights [K]."""
    w, b = layer(name, SHAPES)
    return w, b, norm_weight(w.shape[1], "cuda", seed=w.shape[0])


def poisoned(m: int, n: int) -> torch.Tensor:
    return torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")


def rows(k: int, m: int, seed: int) -> torch.Tensor:
    return operands(1, k, m, False, "cuda", seed=seed)[0] * 3


@needs_gpu
@pytest.mark.parametrize("name", NAMES)
def test_norm_matches_reference(name):
    w, b, g = normed_layer(name)
    (n, k), sms = w.shape, torch.cuda.get_device_properties(0).multi_processor_count
    for m in (1, 8, 16):
        x, out = rows(k, m, 100 + m), poisoned(m, n)
        assert gemm(x, w, b, out=out, norm=(g, EPS)) is out
        check_close(out, gemm_reference(x, w, b, norm=(g, EPS)), f"{name} {tuple(w.shape)} M={m} plan {plan(n, k, sms)}")


@needs_gpu
@pytest.mark.parametrize("name", ["8b-qkv", "1b-qkv", "qwen1.5b-qkv", "odd-2", "odd-4"])
def test_norm_rows_are_bitwise_invariant(name):
    w, b, g = normed_layer(name)
    k = w.shape[1]

    def run(x):
        out = poisoned(x.shape[0], w.shape[0])
        return gemm(x, w, b, out=out, norm=(g, EPS))
    assert_rows_bitwise_invariant(f"gemm norm {name}", rows(k, 16, 300), run, lambda m, seed: rows(k, m, seed),
                                  check_bitwise)


@needs_gpu
@pytest.mark.parametrize("name", ["8b-qkv", "odd-2", "odd-3"])
def test_residual_is_bitwise_torch_add(name):
    w, b, g = normed_layer(name)
    (n, k) = w.shape
    for m in (1, 9, 16):
        x, r = rows(k, m, 500 + m), rows(n, m, 600 + m)
        for norm in (None, (g, EPS)):
            want = r + gemm(x, w, b, norm=norm)  # torch's bf16 add on the GEMM's output
            out = poisoned(m, n)
            check_bitwise(gemm(x, w, b, out=out, norm=norm, residual=r), want, f"{name} M={m} norm={norm is not None}")
            in_place = r.clone()
            check_bitwise(gemm(x, w, b, out=in_place, norm=norm, residual=in_place), want, f"{name} M={m} in place")


@needs_gpu
@pytest.mark.parametrize("name", GATE_UP)
def test_swiglu_norm_is_bitwise_swiglu_of_gemm_norm(name):
    w = weight(name)
    g = norm_weight(w.shape[1], "cuda", seed=w.shape[0])
    k = w.shape[1]
    for m in (1, 8, 16):
        x, out = rows(k, m, 700 + m), poisoned(m, w.shape[0] // 2)
        assert gemm_swiglu(x, w, out=out, norm=(g, EPS)) is out
        if (w.shape[0] // 2) % 8 == 0:  # norm.swiglu takes it
            check_bitwise(out, swiglu(gemm(x, w, norm=(g, EPS))), f"gate_up {name} M={m}: fused vs swiglu(gemm)")
        check_close(out, gemm_swiglu_reference(x, w, norm=(g, EPS)), f"gate_up {name} M={m}: fused vs reference")
    assert_rows_bitwise_invariant(f"gemm_swiglu norm {name}", rows(k, 16, 800),
                                  lambda x: gemm_swiglu(x, w, norm=(g, EPS)), lambda m, seed: rows(k, m, seed),
                                  check_bitwise)
