"""The row-invariant small-M GEMM (cuda/gemm.cu, swiftspec_core/kernels/gemm.py): its torch reference
against float64 and its input checks on CPU; on GPU the kernel against the reference on the Llama /
Qwen layer shapes and odd ones, and a row's bits independent of M, of its row index, of the rows
beside it, and of CUDA graph capture."""
from __future__ import annotations

import re

import pytest
import torch

from kernel_checks import assert_rows_bitwise_invariant, replay_on
from swiftspec_core.graphs import capture
from swiftspec_core.kernels.build import CUDA_DIR
from swiftspec_core.kernels.gemm import MAX_SPLITS, UNROLL, gemm, gemm_reference, plan

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# [N, K] weights: Llama-3-8B TP1, Llama-3.2-1B TP1, their TP2 halves (N of qkv / gate_up, K of o /
# down), Qwen2.5-1.5B (qkv has a bias).
LAYERS = {
    "8b-qkv": (6144, 4096), "8b-o": (4096, 4096), "8b-gate_up": (28672, 4096), "8b-down": (4096, 14336),
    "8b-lm_head": (128256, 4096),
    "1b-qkv": (3072, 2048), "1b-o": (2048, 2048), "1b-gate_up": (16384, 2048), "1b-down": (2048, 8192),
    "1b-lm_head": (128256, 2048),
    "8b-tp2-qkv": (3072, 4096), "8b-tp2-o": (4096, 2048), "8b-tp2-gate_up": (14336, 4096),
    "8b-tp2-down": (4096, 7168),
    "1b-tp2-qkv": (1536, 2048), "1b-tp2-o": (2048, 1024), "1b-tp2-gate_up": (8192, 2048),
    "1b-tp2-down": (2048, 4096),
    "qwen1.5b-qkv": (2048, 1536), "qwen1.5b-lm_head": (151936, 1536),
}
BIASED = {"qwen1.5b-qkv"}
# N not a multiple of any tile (8, 16, 32 columns), K not a multiple of the 32-wide chunk, tiny ones.
ODD = {"odd-1": (1000, 40), "odd-2": (4099, 1544), "odd-3": (77, 8), "odd-4": (9, 4104),
       "odd-5": (2053, 2056)}


def operands(n: int, k: int, m: int, bias: bool, device: str, seed: int):
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(m, k, generator=g, device=device).to(torch.bfloat16)
    w = (torch.randn(n, k, generator=g, device=device) / k ** 0.5).to(torch.bfloat16)
    b = torch.randn(n, generator=g, device=device).to(torch.bfloat16) if bias else None
    return x, w, b


# --- CPU: the reference and the checks ---------------------------------------------------------

@pytest.mark.parametrize("m,n,k,bias", [(1, 64, 128, False), (7, 300, 520, True), (16, 129, 4096, True)])
def test_reference_matches_float64(m, n, k, bias):
    x, w, b = operands(n, k, m, bias, "cpu", seed=m)
    got = gemm_reference(x, w, b)
    exact = x.double() @ w.double().T + (b.double() if bias else 0)
    assert got.dtype == torch.bfloat16 and got.shape == (m, n)
    # fp32 accumulation then one rounding: within half a bf16 ulp (at most 2^-8 relative) of the
    # float64 value plus fp32's own error, and equal to float64 rounded once on all but the values
    # at a rounding boundary.
    err = (got.double() - exact).abs()
    assert (err <= exact.abs() * 2 ** -8 + 1e-4).all(), f"max error {err.max():.3g}"
    same = (got == exact.to(torch.bfloat16)).double().mean().item()
    assert same >= 0.98, f"only {same:.3f} of the elements equal float64 rounded once"


def test_reference_rounds_once():
    # 1 + 2^-8 + 2^-8 is 1 + 2^-7, one bf16 ulp above 1; rounding after each term would give 1
    # (1 + 2^-8 is a tie, rounded to the even 1).
    x = torch.tensor([[1.0, 1.0, 1.0]], dtype=torch.bfloat16)
    w = torch.tensor([[1.0, 2 ** -8, 2 ** -8]], dtype=torch.bfloat16)
    assert gemm_reference(x, w).item() == 1 + 2 ** -7
    assert gemm_reference(x, w, torch.tensor([2 ** -7], dtype=torch.bfloat16)).item() == 1 + 2 ** -6


def misaligned(m: int, k: int) -> torch.Tensor:
    return torch.zeros(m * k + 1, dtype=torch.bfloat16)[1:].view(m, k)  # 2 bytes past the storage


@pytest.mark.parametrize("case,pattern", [
    ("rows", "1..16"), ("no-rows", "1..16"), ("k8", "multiple of 8"), ("k-mismatch", "do not match"),
    ("dtype", "bfloat16"), ("w-dtype", "bfloat16"), ("3d", "2-D"), ("bias-shape", "bias must be"),
    ("bias-dtype", "bfloat16"), ("out-shape", "out must be"), ("strided", "contiguous"),
    ("misaligned", "16-byte aligned"), ("cpu", "CUDA device"),
])
def test_bad_operands_raise(case, pattern):
    bf = torch.bfloat16
    x, w = torch.zeros(4, 64, dtype=bf), torch.zeros(32, 64, dtype=bf)
    bias, out = None, None
    if case == "rows":
        x = torch.zeros(17, 64, dtype=bf)
    elif case == "no-rows":
        x = torch.zeros(0, 64, dtype=bf)
    elif case == "k8":
        x, w = torch.zeros(4, 60, dtype=bf), torch.zeros(32, 60, dtype=bf)
    elif case == "k-mismatch":
        w = torch.zeros(32, 72, dtype=bf)
    elif case == "dtype":
        x = x.float()
    elif case == "w-dtype":
        w = w.half()
    elif case == "3d":
        x = x[None]
    elif case == "bias-shape":
        bias = torch.zeros(31, dtype=bf)
    elif case == "bias-dtype":
        bias = torch.zeros(32)
    elif case == "out-shape":
        out = torch.zeros(4, 33, dtype=bf)
    elif case == "strided":
        w = torch.zeros(64, 32, dtype=bf).T
    elif case == "misaligned":
        x = misaligned(4, 64)
    with pytest.raises(ValueError, match=pattern):
        gemm(x, w, bias, out)


def test_unroll_table_matches_the_kernels():
    kernels = re.findall(r"^GEMM_KERNEL\((\d+), (\d+), \d+\)", (CUDA_DIR / "gemm.cu").read_text(), re.MULTILINE)
    assert {int(nt): int(u) for nt, u in kernels} == UNROLL


def test_plan_gives_two_warps_where_one_warp_a_block_is_more_than_a_wave():
    # 132 SMs x WARPS_PER_SM 16 = 2112 warps a wave: the 8B / 1B lm_heads' 4008 blocks take two warps
    # each (NOTES v68); the 8B TP2 shard's 2004 blocks and the layers keep the occupancy rule.
    assert plan(*LAYERS["8b-lm_head"], 132) == (4, 2) and plan(*LAYERS["1b-lm_head"], 132) == (4, 2)
    assert plan(64128, 4096, 132) == (4, 1)
    assert plan(*LAYERS["8b-gate_up"], 132) == (4, 2) and plan(*LAYERS["8b-down"], 132) == (4, 16)


@pytest.mark.parametrize("n,k", list(LAYERS.values()) + list(ODD.values()))
def test_plan_fits_the_kernel(n, k):
    nt, splits = plan(n, k, 132)
    assert nt in UNROLL and splits in (1, 2, 4, 8, 16) and splits <= MAX_SPLITS
    assert splits == 1 or -(-k // 32) >= splits * UNROLL[nt]  # no warp left without a full group
    assert splits * nt * 4 * 32 * 4 <= 48 * 1024  # the combine's shared memory, without opting in


# --- GPU: the kernel ---------------------------------------------------------------------------

def mismatch_report(got: torch.Tensor, ref: torch.Tensor) -> str:
    """Everything needed to fix a failure from one log: max error, where, how many differ."""
    diff = (got.float() - ref.float()).abs().nan_to_num(float("inf"))
    bad = (got != ref).nonzero()
    first = tuple(bad[0].tolist()) if len(bad) else None
    worst = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    return (f"max |err| {diff.max().item():.4g} at {worst} "
            f"(got {got[worst].item():.6g}, ref {ref[worst].item():.6g}), "
            f"max |ref| {ref.float().abs().max().item():.4g}, {len(bad)}/{ref.numel()} differ, "
            f"first at {first}"
            + (f" (got {got[first].item():.6g}, ref {ref[first].item():.6g})" if first else "")
            + f", NaN in got: {int(got.isnan().sum())}")


def check_close(got: torch.Tensor, ref: torch.Tensor, label: str) -> None:
    # Both sides accumulate in fp32 (in different orders: ~K * 2^-24 of the terms' magnitude) and
    # round once to bf16, so they agree except where the two fp32 sums straddle a bf16 rounding
    # boundary: there they differ by one ulp, at most 2^-7 max|ref| (0.8%). 1e-2 max|ref| allows
    # that with room for the tensor cores' accumulation; a wrong index, a lost or doubled chunk or a
    # missing bias moves values by more, and moves most elements off exact equality, which the
    # second check (>= 90% bitwise equal) catches.
    report = mismatch_report(got, ref)
    print(f"{label}: {report}")
    assert not got.isnan().any(), f"{label}: unwritten (NaN-poisoned) outputs: {report}"
    tol = 1e-2 * ref.float().abs().max().item()
    assert (got.float() - ref.float()).abs().max().item() <= tol, f"{label}: {report}"
    same = (got == ref).float().mean().item()
    assert same >= 0.9, f"{label}: only {same:.3f} of the elements equal the reference bitwise: {report}"


def check_bitwise(got: torch.Tensor, ref: torch.Tensor, label: str) -> None:
    assert torch.equal(got.view(torch.int16), ref.view(torch.int16)), f"{label} not bitwise equal: " \
        + mismatch_report(got, ref)


_weights: dict = {}


def layer(name: str, shapes: dict) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One [N, K] weight (and bias) per layer name for the whole module: lm_head is 1 GB."""
    if name not in _weights:
        _weights.clear()
        n, k = shapes[name]
        _, w, b = operands(n, k, 1, name in BIASED or name.startswith("odd"), "cuda", seed=len(name))
        _weights[name] = (w, b)
    return _weights[name]


def run_poisoned(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    out = torch.full((x.shape[0], w.shape[0]), float("nan"), dtype=torch.bfloat16, device=x.device)
    assert gemm(x, w, b, out=out) is out
    return out


@needs_gpu
@pytest.mark.parametrize("name", list(LAYERS))
def test_gemm_matches_reference_on_layers(name):
    w, b = layer(name, LAYERS)
    nt, splits = plan(*w.shape, torch.cuda.get_device_properties(0).multi_processor_count)
    for m in (1, 8, 16):
        x, _, _ = operands(1, w.shape[1], m, False, "cuda", seed=100 + m)
        label = f"{name} {tuple(w.shape)} M={m} nt={nt} S={splits}"
        check_close(run_poisoned(x, w, b), gemm_reference(x, w, b), label)


@needs_gpu
@pytest.mark.parametrize("name", list(ODD))
def test_gemm_matches_reference_on_odd_shapes(name):
    w, b = layer(name, ODD)
    for m in range(1, 17):
        x, _, _ = operands(1, w.shape[1], m, False, "cuda", seed=200 + m)
        check_close(run_poisoned(x, w, b), gemm_reference(x, w, b), f"{name} {tuple(w.shape)} M={m}")
    assert torch.equal(gemm(x, w, b), run_poisoned(x, w, b))  # allocated out == given out


@needs_gpu
@pytest.mark.parametrize("name", list(LAYERS) + list(ODD))
def test_rows_are_bitwise_invariant(name):
    w, b = layer(name, {**LAYERS, **ODD})
    k = w.shape[1]
    x, _, _ = operands(1, k, 16, False, "cuda", seed=300)
    assert_rows_bitwise_invariant(name, x, lambda rows: run_poisoned(rows, w, b),
                                  lambda m, seed: operands(1, k, m, False, "cuda", seed=seed)[0], check_bitwise)


@needs_gpu
@pytest.mark.parametrize("name", ["8b-o", "1b-down", "qwen1.5b-qkv", "odd-2"])
def test_graph_replay_is_bitwise_eager(name):
    w, b = layer(name, {**LAYERS, **ODD})
    m, k = 8, w.shape[1]
    x = torch.zeros(m, k, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(m, w.shape[0], dtype=torch.bfloat16, device="cuda")
    graph, _ = capture(lambda: gemm(x, w, b, out=out), warmups=1)  # the warm-up compiles and loads the kernel
    for seed in (500, 501, 502):
        fresh, _, _ = operands(1, k, m, False, "cuda", seed=seed)
        check_bitwise(replay_on(graph, x, out, fresh), gemm(fresh, w, b), f"{name}: graph replay vs eager, seed {seed}")
        check_bitwise(out[5], gemm(fresh[5:6], w, b)[0], f"{name}: graph replay row 5 vs M=1 eager")
        check_close(out, gemm_reference(fresh, w, b), f"{name}: graph replay vs reference")
