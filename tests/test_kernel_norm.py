"""Fused add + RMSNorm, RMSNorm and SwiGLU (cuda/norm.cu, swiftspec_core/kernels/norm.py).

CPU: the torch references against float64, the launch shape, the argument checks. GPU (skipped
without CUDA): the kernels against the references with their outputs poisoned (NaN) first, bitwise
row invariance, and replay under a torch CUDA graph.

Tolerance on GPU: x = h + m bitwise equal to torch's bf16 add; y and SwiGLU within 1 bf16 ulp of the
reference (both compute in fp32 and round once; only the summation order and exp differ, by a few
fp32 ulps, which can move a rounding by one bf16 ulp at most).
"""
from __future__ import annotations

import pytest
import torch

from swiftspec_core.kernels.norm import (MAX_THREADS, add_rmsnorm, add_rmsnorm_reference, norm_launch, rmsnorm,
                                         rmsnorm_reference, swiglu, swiglu_reference)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
EPS = 1e-5
DIMS = (1536, 2048, 4096, 8192)
FFNS = (4864, 8192, 14336)  # 28672 / 2 (Llama-3-70B's ffn at TP2) is 14336 again


def ordered(t: torch.Tensor) -> torch.Tensor:
    """bf16 bits as integers in the order of the values (adjacent bf16 numbers differ by 1)."""
    bits = t.view(torch.int16).int()
    magnitude = bits & 0x7FFF
    return torch.where(bits < 0, -magnitude, magnitude)


def ulps(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (ordered(a) - ordered(b)).abs()


def assert_within_ulps(got: torch.Tensor, want: torch.Tensor, max_ulps: int, what: str) -> None:
    """got, want: bf16 of one shape. Prints the worst distance and the first element beyond it."""
    assert not torch.isnan(got).any(), f"{what}: {int(torch.isnan(got).sum())} NaN (unwritten?) of {got.numel()}"
    d = ulps(got, want)
    worst = int(d.max()) if d.numel() else 0
    bad = (d > max_ulps).nonzero()
    first = ""
    if len(bad):
        i = tuple(bad[0].tolist())
        first = f"; first at {i}: got {float(got[i])!r}, want {float(want[i])!r}"
    print(f"{what}: max {worst} ulp over {got.numel()} elements, {len(bad)} beyond {max_ulps}{first}")
    assert worst <= max_ulps, f"{what}: {len(bad)} elements beyond {max_ulps} bf16 ulp (max {worst}){first}"


def assert_close_to_float64(got: torch.Tensor, exact: torch.Tensor, what: str) -> None:
    """A bf16 result rounded once from an fp32 computation: within 1 ulp of the exact value's
    rounding everywhere, and equal to it almost everywhere (fp32 error moves a rounding only when
    the exact value sits within a few fp32 ulps of a bf16 midpoint)."""
    assert_within_ulps(got, exact.to(torch.bfloat16), 1, what)
    differ = (got != exact.to(torch.bfloat16)).float().mean().item()
    assert differ < 0.01, f"{what}: {differ:.2%} of elements are not the exact value's rounding"


def rows_bf16(t: int, d: int, seed: int, scale: float = 1.0, device: str = "cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(t, d, generator=g, dtype=torch.float64) * scale).to(torch.bfloat16).to(device)


def norm_weight(d: int, seed: int, device: str = "cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (0.5 + torch.rand(d, generator=g, dtype=torch.float64)).to(torch.bfloat16).to(device)


def rmsnorm_float64(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.double()
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) / x.shape[-1] + eps) * weight.double()


# --- CPU: references against float64 ---

@pytest.mark.parametrize("dim", (1536, 4096))
def test_add_rmsnorm_reference_equals_float64(dim):
    h, m, w = rows_bf16(16, dim, 0, 4.0), rows_bf16(16, dim, 1), norm_weight(dim, 2)
    x, y = add_rmsnorm_reference(h, m, w, EPS)
    assert x.dtype == y.dtype == torch.bfloat16
    # The sum of two bf16 is exact in float64, so torch's add must be its one correct rounding.
    assert torch.equal(x, (h.double() + m.double()).to(torch.bfloat16))
    assert_close_to_float64(y, rmsnorm_float64(x, w, EPS), f"add_rmsnorm reference y, D={dim}")


def test_add_rmsnorm_reference_first_layer_and_out_buffers():
    h, w = rows_bf16(3, 2048, 3), norm_weight(2048, 4)
    x_out, y_out = torch.full_like(h, float("nan")), torch.full_like(h, float("nan"))
    x, y = add_rmsnorm_reference(h, torch.zeros_like(h), w, EPS, x_out=x_out, y_out=y_out)
    assert x is x_out and y is y_out
    assert torch.equal(x, h)  # m = 0 (the first layer): x is h itself
    assert torch.equal(y, rmsnorm_reference(h, w, EPS))


def test_rmsnorm_reference_equals_float64_and_keeps_wider_dtypes():
    x, w = rows_bf16(16, 2048, 5, 0.01), norm_weight(2048, 6)  # small values: eps matters a little
    assert_close_to_float64(rmsnorm_reference(x, w, EPS), rmsnorm_float64(x, w, EPS), "rmsnorm reference")
    xf, wf = x.float() * 3, w.float()
    got = rmsnorm_reference(xf, wf, EPS)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), rmsnorm_float64(xf, wf, EPS), rtol=1e-5, atol=1e-6)
    got64 = rmsnorm_reference(x.double(), w.double(), EPS)
    assert got64.dtype == torch.float64
    torch.testing.assert_close(got64, rmsnorm_float64(x, w, EPS), rtol=1e-13, atol=0)


@pytest.mark.parametrize("ffn", (4864, 14336))
def test_swiglu_reference_equals_float64(ffn):
    gate_up = rows_bf16(16, 2 * ffn, 7, 3.0)
    out = torch.full((16, ffn), float("nan"), dtype=torch.bfloat16)
    got = swiglu_reference(gate_up, out=out)
    assert got is out and got.shape == (16, ffn)
    gate, up = gate_up.double().chunk(2, dim=-1)
    assert_close_to_float64(got, gate / (1 + torch.exp(-gate)) * up, f"swiglu reference, F={ffn}")


# --- CPU: launch shape and argument checks ---

def test_norm_launch_depends_on_dim_only_and_covers_it():
    for dim in range(8, 8 * MAX_THREADS * 4 + 1, 8):
        threads, per_thread = norm_launch(dim)
        assert threads % 32 == 0 and 32 <= threads <= MAX_THREADS, dim
        assert threads * per_thread * 8 >= dim, dim  # every chunk has a thread
        assert (threads - 32) * per_thread * 8 < dim, dim  # no warp without a chunk
        assert per_thread == 1 or -(-dim // 8 // (per_thread // 2)) > MAX_THREADS, dim  # the fewest that fit
    assert norm_launch(8192) == (1024, 1) and norm_launch(1536) == (192, 1)
    with pytest.raises(ValueError, match="dim"):
        norm_launch(8 * MAX_THREADS * 4 + 8)


def test_bad_arguments_raise_before_any_launch():
    h, w = rows_bf16(2, 64, 8), norm_weight(64, 9)
    with pytest.raises(ValueError, match="multiple of 8"):
        add_rmsnorm(h[:, :60].contiguous(), h[:, :60].contiguous(), w[:60], EPS)
    with pytest.raises(ValueError, match="bfloat16"):
        add_rmsnorm(h.float(), h.float(), w, EPS)
    with pytest.raises(ValueError, match="m has shape"):
        add_rmsnorm(h, h[:1], w, EPS)
    with pytest.raises(ValueError, match="weight has shape"):
        rmsnorm(h, w[:32], EPS)
    with pytest.raises(ValueError, match="not contiguous"):
        rmsnorm(h, w, EPS, out=torch.empty(64, 2, dtype=torch.bfloat16).t())
    with pytest.raises(ValueError, match="aligned"):
        rmsnorm(h, w, EPS, out=torch.empty(2 * 64 + 1, dtype=torch.bfloat16)[1:].view(2, 64))
    with pytest.raises(ValueError, match="2F"):
        swiglu(rows_bf16(2, 24, 10))
    with pytest.raises(ValueError, match="out has shape"):
        swiglu(rows_bf16(2, 32, 10), out=torch.empty(2, 32, dtype=torch.bfloat16))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            add_rmsnorm(h, h, w, EPS)
        with pytest.raises(ValueError, match="CUDA"):
            swiglu(rows_bf16(2, 32, 10))


# --- GPU: kernels against references, row invariance, graphs ---

def poisoned(shape, device="cuda") -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=torch.bfloat16, device=device)


@needs_cuda
@pytest.mark.parametrize("dim", DIMS)
def test_add_rmsnorm_and_rmsnorm_kernels_equal_references(dim):
    w = norm_weight(dim, 11, "cuda")
    for t in range(1, 17):
        h, m = rows_bf16(t, dim, 100 + t, 4.0, "cuda"), rows_bf16(t, dim, 200 + t, 1.0, "cuda")
        if t == 3:
            m.zero_()  # the first layer
        x_ref, y_ref = add_rmsnorm_reference(h, m, w, EPS)
        x, y = add_rmsnorm(h, m, w, EPS, x_out=poisoned((t, dim)), y_out=poisoned((t, dim)))
        assert_within_ulps(x, x_ref, 0, f"add_rmsnorm x, D={dim} T={t}")
        assert_within_ulps(y, y_ref, 1, f"add_rmsnorm y, D={dim} T={t}")
        z = rmsnorm(h, w, EPS, out=poisoned((t, dim)))
        assert_within_ulps(z, rmsnorm_reference(h, w, EPS), 1, f"rmsnorm, D={dim} T={t}")
    # In place (x over h, y over m, the final norm over its input): the same bits as out of place.
    h2, m2 = h.clone(), m.clone()
    add_rmsnorm(h2, m2, w, EPS, x_out=h2, y_out=m2)
    assert torch.equal(h2, x) and torch.equal(m2, y), "add_rmsnorm in place differs from out of place"
    assert torch.equal(rmsnorm(h, w, EPS, out=h), z), "rmsnorm in place differs from out of place"


@needs_cuda
@pytest.mark.parametrize("ffn", FFNS)
def test_swiglu_kernel_equals_reference(ffn):
    for t in range(1, 17):
        gate_up = rows_bf16(t, 2 * ffn, 300 + t, 3.0, "cuda")
        got = swiglu(gate_up, out=poisoned((t, ffn)))
        assert_within_ulps(got, swiglu_reference(gate_up), 1, f"swiglu, F={ffn} T={t}")


def placed(row: torch.Tensor, t: int, at: int, seed: int) -> torch.Tensor:
    """row [1, D] at index `at` among t - 1 other random rows."""
    rows = rows_bf16(t, row.shape[-1], seed, 4.0, "cuda")
    rows[at] = row[0]
    return rows


@needs_cuda
@pytest.mark.parametrize("dim", DIMS)
def test_norm_rows_are_bitwise_invariant(dim):
    w = norm_weight(dim, 12, "cuda")
    h, m = rows_bf16(1, dim, 13, 4.0, "cuda"), rows_bf16(1, dim, 14, 1.0, "cuda")
    x1, y1 = add_rmsnorm(h, m, w, EPS)
    z1 = rmsnorm(h, w, EPS)
    for t, at in ((16, 0), (16, 9), (16, 15), (5, 3), (2, 1)):
        x, y = add_rmsnorm(placed(h, t, at, 15 + t), placed(m, t, at, 16 + at), w, EPS,
                           x_out=poisoned((t, dim)), y_out=poisoned((t, dim)))
        z = rmsnorm(placed(h, t, at, 17 + t), w, EPS, out=poisoned((t, dim)))
        for name, alone, inside in (("x", x1, x[at:at + 1]), ("y", y1, y[at:at + 1]), ("rmsnorm", z1, z[at:at + 1])):
            assert_within_ulps(inside, alone, 0, f"{name} row alone vs at {at} of T={t}, D={dim}")


@needs_cuda
@pytest.mark.parametrize("ffn", FFNS)
def test_swiglu_rows_are_bitwise_invariant(ffn):
    gate_up = rows_bf16(1, 2 * ffn, 18, 3.0, "cuda")
    alone = swiglu(gate_up)
    for t, at in ((16, 0), (16, 11), (7, 6)):
        inside = swiglu(placed(gate_up, t, at, 19 + t), out=poisoned((t, ffn)))
        assert_within_ulps(inside[at:at + 1], alone, 0, f"swiglu row alone vs at {at} of T={t}, F={ffn}")


@needs_cuda
def test_kernels_replay_under_a_cuda_graph():
    t, dim, ffn = 8, 4096, 14336
    w = norm_weight(dim, 20, "cuda")
    h, m, gate_up = poisoned((t, dim)), poisoned((t, dim)), poisoned((t, 2 * ffn))
    x, y, z, s = poisoned((t, dim)), poisoned((t, dim)), poisoned((t, dim)), poisoned((t, ffn))

    def step():
        add_rmsnorm(h, m, w, EPS, x_out=x, y_out=y)
        rmsnorm(x, w, EPS, out=z)
        swiglu(gate_up, out=s)

    def new_inputs(seed):
        h.copy_(rows_bf16(t, dim, seed, 4.0, "cuda"))
        m.copy_(rows_bf16(t, dim, seed + 10, 1.0, "cuda"))
        gate_up.copy_(rows_bf16(t, 2 * ffn, seed + 20, 3.0, "cuda"))

    new_inputs(21)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # compiles the kernels outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    for seed in (24, 25):  # fresh inputs each replay: the graph reads the buffers, not baked values
        new_inputs(seed)
        for out in (x, y, z, s):
            out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        x_e, y_e = add_rmsnorm(h, m, w, EPS)
        for name, got, want in (("x", x, x_e), ("y", y, y_e), ("rmsnorm", z, rmsnorm(x_e, w, EPS)),
                                ("swiglu", s, swiglu(gate_up))):
            assert_within_ulps(got, want, 0, f"graph replay vs eager: {name}, inputs {seed}")
