"""The dequantizing AWQ GEMM (cuda/awq_gemm.cu, swiftspec_core/kernels/awq_gemm.py): its torch
reference against float64, the tiled layout it reads (a permutation of the hub's) and its input
checks on CPU (plan(): test_awq_plan.py); on GPU, on tiled weights as the engine holds them, the kernel against the reference
on every layer shape of Llama-3-70B / 8B / 3.2-3B / 3.2-1B at TP1 and TP2 (M = 1, 8, 9, 16) and on
Qwen2.5 and odd ones, a row's bits independent of M, of its index and of the other rows, CUDA graph
replay, and an AWQ engine's fused forward (--kernels fused --quant awq) against its torch path, every
decoder emitting fused ar's tokens."""
from __future__ import annotations

import weakref

import pytest
import torch

from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import (CLUSTERS, SPLITS, awq_gemm, awq_gemm_reference, awq_swiglu,
                                             fuses_swiglu, launch_shape, plan)
from kernel_checks import assert_rows_bitwise_invariant, replay_on
from swiftspec_core.graphs import capture
from swiftspec_core.kernels.gemm import gemm_reference
from swiftspec_core.models import awq
from test_kernel_gemm import check_bitwise, mismatch_report

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# [N, K]: Llama-3-70B TP1 and TP2, Llama-3-8B, Llama-3.2-1B TP2, Qwen2.5-1.5B (qkv biased), Qwen2.5-0.5B.
LAYERS = {
    "70b-qkv": (10240, 8192), "70b-o": (8192, 8192), "70b-gate_up": (57344, 8192), "70b-down": (8192, 28672),
    "70b-tp2-qkv": (5120, 8192), "70b-tp2-o": (8192, 4096), "70b-tp2-down": (8192, 14336),
    "8b-qkv": (6144, 4096), "8b-down": (4096, 14336), "1b-tp2-o": (2048, 1024),
    "qwen1.5b-qkv": (2048, 1536), "qwen1.5b-down": (1536, 8960), "qwen0.5b-qkv": (1152, 896),
}
BIASED = {"qwen1.5b-qkv", "qwen0.5b-qkv"}
# N not a multiple of the block's 64 columns (the last tile zero-padded), group 32 and 64, a single
# chunk; odd-1..4 have N % 32 != 0, odd-5 N % 64 == 32 (a half-empty last tile).
ODD = {"odd-1": ((1000, 256), 128), "odd-2": ((72, 96), 32), "odd-3": ((2056, 640), 64), "odd-4": ((8, 32), 32),
       "odd-5": ((2080, 384), 128)}
H200_SMS = 132


def packed_layer(n: int, k: int, group: int, device: str, seed: int) -> awq.AWQWeight:
    """Random codes, zero points and scales (scaled so outputs stay near 1)."""
    g = torch.Generator(device=device).manual_seed(seed)
    codes = torch.randint(0, 16, (n, k), generator=g, device=device, dtype=torch.uint8)
    zeros = torch.randint(0, 16, (n, k // group), generator=g, device=device, dtype=torch.uint8)
    scales = (torch.rand(n, k // group, generator=g, device=device) + 0.5) / (5 * k ** 0.5)
    return awq.pack(codes, zeros, scales)


def activations(m: int, k: int, device: str, seed: int, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(m, k, generator=g, device=device).to(dtype)


DTYPES = pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])  # x: the two kernels


# --- CPU: the reference and the checks ---------------------------------------------------------

@pytest.mark.parametrize("m,n,k,group,bias", [(1, 64, 128, 128, False), (7, 136, 256, 64, True), (16, 8, 96, 32, True)])
def test_reference_matches_float64(m, n, k, group, bias):
    w = packed_layer(n, k, group, "cpu", seed=m)
    x = activations(m, k, "cpu", seed=m + 1)
    b = torch.randn(n).to(torch.bfloat16) if bias else None
    got = awq_gemm_reference(x, w, b)
    # float64 from the codes themselves: (q - z) * s per element, by hand.
    codes, zeros, scales = (t.double() for t in awq.unpack(w))
    weight = (codes - zeros.repeat_interleave(group, 1)) * scales.repeat_interleave(group, 1)
    exact = x.double() @ weight.to(torch.bfloat16).double().T + (b.double() if bias else 0)
    assert got.dtype == torch.bfloat16 and got.shape == (m, n)
    err = (got.double() - exact).abs()
    assert (err <= exact.abs() * 2 ** -8 + 1e-4).all(), f"max error {err.max():.3g}"


@pytest.mark.parametrize("n,k,group", [(64, 128, 32), (136, 256, 64), (8, 32, 32), (2080, 384, 128)])
def test_tiling_is_a_permutation(n, k, group):
    """untile(tile(w)) is w bit for bit; the tiles hold every hub value once and zeros past N; each
    tile's K rows are contiguous (a warp's 32-row chunk is 1 KB in one piece); and the dequantized
    weight (so the reference) is the same from either layout."""
    w = packed_layer(n, k, group, "cpu", seed=n)
    t = awq.tile(w)
    blocks = -(-n // 64)
    assert t.n == n and t.shape == (n, k) and t.group == group
    assert [tuple(p.shape) for p in t[:3]] == [(blocks, k, 8), (blocks, k // group, 8), (blocks, k // group, 64)]
    assert all(p.is_contiguous() for p in t[:3]) and t.qweight.stride() == (8 * k, 8, 1)
    assert [p.dtype for p in t[:3]] == [p.dtype for p in w]
    back = awq.untile(t)
    assert all(torch.equal(a, b) and a.is_contiguous() for a, b in zip(back, w))
    for hub, tiled in zip(w, t[:3]):
        padded = torch.cat([hub.flatten(), hub.new_zeros(tiled.numel() - hub.numel())])
        assert torch.equal(padded.sort().values, tiled.flatten().sort().values)
    assert torch.equal(awq.dequantize(t), awq.dequantize(w))


def test_tile_positions_by_hand():
    """N = 136 (17 int32 columns: tiles 0, 1 whole, tile 2 holds int32 column 16 alone), K = 256, G = 64."""
    w = packed_layer(136, 256, 64, "cpu", seed=3)
    t = awq.tile(w)
    assert t.qweight[1, 37, 2] == w.qweight[37, 10]  # int32 column 10 = tile 1, its column 2
    assert t.qweight[2, 255, 0] == w.qweight[255, 16]
    assert t.qzeros[1, 3, 1] == w.qzeros[3, 9]
    assert t.scales[1, 1, 6] == w.scales[1, 70]  # output column 70 = tile 1, its column 6
    assert t.scales[2, 2, 7] == w.scales[2, 135]
    # A warp's chunk c of tile b: K rows 32c .. 32c + 31, 8 int32 each, 1 KB from int32 8 (K b + 32 c).
    flat = t.qweight.flatten()
    assert torch.equal(flat[8 * (256 * 1 + 32 * 5):][:256].view(32, 8), w.qweight[160:192, 8:16])
    assert (t.qweight[2, :, 1:] == 0).all() and (t.qzeros[2, :, 1:] == 0).all() and (t.scales[2, :, 8:] == 0).all()


@pytest.mark.parametrize("case,pattern", [
    ("hub-layout", "tiled layout"), ("rows", "1..16"), ("k-mismatch", "do not match"), ("n", "do not match"),
    ("group", "groups of 32, 64, 128"), ("group-96", "groups of 32, 64, 128"), ("group-256", "groups of 32, 64, 128"),
    ("zeros", "do not fit"),
    ("x-dtype", "bfloat16 or float16"), ("scales-dtype", "float16"), ("bias-shape", "bias must be"),
    ("out-shape", "out must be"), ("misaligned", "16-byte aligned"), ("cpu", "CUDA device"),
])
def test_bad_operands_raise(case, pattern):
    hub = packed_layer(64, 128, 32, "cpu", seed=0)
    w = awq.tile(hub)
    x, bias, out = torch.zeros(4, 128, dtype=torch.bfloat16), None, None
    if case == "hub-layout":
        w = hub
    elif case == "n":
        w = w._replace(n=136)
    elif case == "rows":
        x = torch.zeros(17, 128, dtype=torch.bfloat16)
    elif case == "k-mismatch":
        x = torch.zeros(4, 96, dtype=torch.bfloat16)
    elif case == "group":
        w = awq.tile(packed_layer(64, 128, 16, "cpu", seed=0))
    elif case == "group-96":
        w, x = awq.tile(packed_layer(64, 192, 96, "cpu", seed=0)), torch.zeros(4, 192, dtype=torch.bfloat16)
    elif case == "group-256":  # a power of two the kernel is not built for
        w, x = awq.tile(packed_layer(64, 256, 256, "cpu", seed=0)), torch.zeros(4, 256, dtype=torch.bfloat16)
    elif case == "zeros":
        w = w._replace(qzeros=w.qzeros[:, :, :4].contiguous())
    elif case == "x-dtype":  # bf16 or fp16 (the fp16-operand kernels)
        x = x.float()
    elif case == "scales-dtype":
        w = w._replace(scales=w.scales.float())
    elif case == "bias-shape":
        bias = torch.zeros(63, dtype=torch.bfloat16)
    elif case == "out-shape":
        out = torch.zeros(4, 65, dtype=torch.bfloat16)
    elif case == "misaligned":
        x = torch.zeros(4 * 128 + 1, dtype=torch.bfloat16)[1:].view(4, 128)
    with pytest.raises(ValueError, match=pattern):
        awq_gemm(x, w, bias, out)


def model_layers() -> dict[str, tuple[int, int]]:
    """[N, K] of every AWQ projection of Llama-3-70B, 8B, 3.2-3B and 3.2-1B at TP 1 and 2."""
    layers = {}
    for model in ("llama-3-70b", "llama-3-8b", "llama-3.2-3b", "llama-3.2-1b"):
        for tp in (1, 2):
            for projection in AWQ_PROJECTIONS:
                n, k, _ = gemm_shape(shard_args(model, tp), projection)
                layers[f"{model.removeprefix('llama-')}-tp{tp}-{projection}"] = (n, k)
    return layers


MODEL_LAYERS = model_layers()


# --- GPU: the kernel ---------------------------------------------------------------------------

def exact_weights_reference(x: torch.Tensor, w: awq.TiledAWQWeight, b: torch.Tensor | None) -> torch.Tensor:
    """The kernel's own numerics: the unrounded weights (q - zero) * scale, fp32 sums, one rounding."""
    y = gemm_reference(x.float(), awq.dequantize(w, torch.float32), None if b is None else b.float())
    return y.to(torch.bfloat16)


def check_close(got: torch.Tensor, x: torch.Tensor, w: awq.TiledAWQWeight, b: torch.Tensor | None, label: str) -> None:
    # awq_gemm_reference rounds each weight to bf16 (2^-9 relative) before its fp32 sum; the kernel
    # never rounds a weight (its contract: awq_gemm.py). On CPU, for these shapes, that puts the two
    # at most 0.6% of max|ref| apart, bitwise equal on only ~57% of the elements: so against it, 1e-2
    # max|ref|. Against the exact weights summed in fp32 (another summation order; the kernel's sums
    # of x (128 + q) with the zero folded in once a group round at ~2^-18 of a result) only the
    # elements whose sums straddle a bf16 rounding boundary differ, by one ulp: >= 90% bitwise
    # equal (a CPU proxy of the contract: >= 99.9%). A wrong column, nibble, zero, scale or group
    # moves far more elements than that.
    ref, exact = awq_gemm_reference(x, w, b), exact_weights_reference(x, w, b)
    text = mismatch_report(got, ref)
    same = (got == exact).float().mean().item()
    print(f"{label}: vs reference {text}; {same:.3f} bitwise equal to the exact-weight sum")
    assert not got.isnan().any(), f"{label}: unwritten (NaN-poisoned) outputs: {text}"
    assert (got.float() - ref.float()).abs().max().item() <= 1e-2 * ref.float().abs().max().item(), f"{label}: {text}"
    assert same >= 0.9, f"{label}: {same:.3f} equal the exact-weight sum bitwise: {mismatch_report(got, exact)}"


_layers: dict = {}


def layer(name: str):
    """(tiled weight, bias) per name, one at a time on the GPU (70B gate_up is 235 MB of codes): the
    weights tiled on the GPU once, as the engine holds them (Transformer.use_kernels)."""
    if name not in _layers:
        _layers.clear()
        (n, k), group = ODD[name] if name in ODD else (LAYERS[name], 128)
        g = torch.Generator(device="cuda").manual_seed(len(name))
        bias = torch.randn(n, generator=g, device="cuda").to(torch.bfloat16) if name in BIASED or name in ODD else None
        _layers[name] = (awq.tile(packed_layer(n, k, group, "cuda", seed=len(name))), bias)
    return _layers[name]


def run_poisoned(x: torch.Tensor, w: awq.TiledAWQWeight, b: torch.Tensor | None) -> torch.Tensor:
    out = torch.full((x.shape[0], w.n), float("nan"), dtype=torch.bfloat16, device=x.device)
    assert awq_gemm(x, w, b, out=out) is out
    return out


@needs_gpu
@DTYPES
@pytest.mark.parametrize("name", list(LAYERS) + list(ODD))
def test_awq_gemm_matches_reference(name, dtype):
    w, b = layer(name)
    n, k = w.shape
    splits, cluster = plan(n, k, w.group, torch.cuda.get_device_properties(0).multi_processor_count)
    for m in ((1, 8, 9, 16) if name in LAYERS else range(1, 17)):
        x = activations(m, k, "cuda", seed=100 + m, dtype=dtype)
        check_close(run_poisoned(x, w, b), x, w, b,
                    f"{name} [{n}, {k}] G={w.group} M={m} S={splits} C={cluster} x {dtype}")


@needs_gpu
@pytest.mark.parametrize("name", list(MODEL_LAYERS))
def test_every_model_layer_is_close_and_row_invariant(name):
    """Each layer at its planned shape, M = 1, 8, 9, 16 (output poisoned): close to the reference,
    and the rows of an M < 16 call bitwise those of the same rows in the M = 16 call."""
    n, k = MODEL_LAYERS[name]
    g = torch.Generator(device="cuda").manual_seed(n + k)
    w = awq.tile(packed_layer(n, k, 128, "cuda", seed=n + k))
    b = torch.randn(n, generator=g, device="cuda").to(torch.bfloat16) if name.endswith("qkv") else None
    splits, cluster = plan(n, k, 128, torch.cuda.get_device_properties(0).multi_processor_count)
    x = activations(16, k, "cuda", seed=900)
    full = run_poisoned(x, w, b)
    check_close(full, x, w, b, f"{name} [{n}, {k}] M=16 S={splits} C={cluster}")
    for m in (1, 8, 9):
        got = run_poisoned(x[:m], w, b)
        check_close(got, x[:m], w, b, f"{name} [{n}, {k}] M={m} S={splits} C={cluster}")
        check_bitwise(got, full[:m], f"{name}: rows 0..{m - 1} at M={m} vs in M=16 (S={splits} C={cluster})")


@needs_gpu
@DTYPES
@pytest.mark.parametrize("name", ["odd-5", "odd-1", "odd-2", "odd-3"])  # a half-empty last tile; N % 32 != 0; G 32, 64
def test_every_launch_shape_matches_reference(name, dtype):
    """Every (S warps, C blocks a cluster) the kernel takes, whatever plan() picks today (warps
    without a group included: S C above K / G)."""
    w, b = layer(name)
    n, k = w.shape
    for splits in SPLITS:
        for cluster in CLUSTERS:
            for m in (1, 9):
                x = activations(m, k, "cuda", seed=700 + m, dtype=dtype)
                out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
                launch_shape(x, w, b, out, splits, cluster)
                check_close(out, x, w, b, f"{name} [{n}, {k}] M={m} S={splits} C={cluster}")


@needs_gpu
@DTYPES
@pytest.mark.parametrize("name", ["70b-o", "70b-tp2-down", "70b-tp2-qkv", "qwen1.5b-qkv", "odd-1", "odd-2", "odd-5"])
def test_rows_are_bitwise_invariant(name, dtype):
    w, b = layer(name)
    k = w.shape[1]
    assert_rows_bitwise_invariant(name, activations(16, k, "cuda", seed=300, dtype=dtype),
                                  lambda rows: run_poisoned(rows, w, b),
                                  lambda m, seed: activations(m, k, "cuda", seed=seed, dtype=dtype), check_bitwise)


@needs_gpu
@pytest.mark.parametrize("name", ["70b-tp2-o", "qwen1.5b-qkv", "odd-3"])
def test_graph_replay_is_bitwise_eager(name):
    w, b = layer(name)
    (n, k), m = w.shape, 8
    x = torch.zeros(m, k, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    graph, _ = capture(lambda: awq_gemm(x, w, b, out=out), warmups=1)  # the warm-up compiles and loads the kernel
    for seed in (500, 501):
        fresh = activations(m, k, "cuda", seed)
        check_bitwise(replay_on(graph, x, out, fresh), awq_gemm(fresh, w, b), f"{name}: graph replay vs eager, seed {seed}")
        check_bitwise(out[5], awq_gemm(fresh[5:6], w, b)[0], f"{name}: graph replay row 5 vs M=1 eager")


# --- GPU: gate_up with SwiGLU in the epilogue -----------------------------------------------------

# [2F, K, G]: the 70B (TP 1, 2), 8B, 3.2-3B, 3.2-1B and Qwen2.5-1.5B gate_up; a small one of
# clusters; F = 72 (not whole tiles: the two-kernel path).
SWIGLU_LAYERS = {"70b": (57344, 8192, 128), "70b-tp2": (28672, 8192, 128), "8b": (28672, 4096, 128),
                 "3b": (16384, 3072, 128), "1b": (16384, 2048, 128), "qwen1.5b": (17920, 1536, 128),
                 "small": (384, 512, 64), "f72": (144, 256, 32)}


def swiglu_layer(name: str) -> awq.TiledAWQWeight:
    n, k, group = SWIGLU_LAYERS[name]
    return awq.tile(packed_layer(n, k, group, "cuda", seed=n + k))


def swiglu_poisoned(x: torch.Tensor, w: awq.TiledAWQWeight) -> torch.Tensor:
    out = torch.full((x.shape[0], w.n // 2), float("nan"), dtype=torch.bfloat16, device=x.device)
    assert awq_swiglu(x, w, out=out) is out
    return out


@needs_gpu
@pytest.mark.parametrize("name", list(SWIGLU_LAYERS))
def test_awq_swiglu_is_bitwise_swiglu_of_awq_gemm(name):
    from swiftspec_core.kernels.norm import swiglu

    w = swiglu_layer(name)
    n, k = w.shape
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert fuses_swiglu(n, k, w.group, sms) == (name != "f72")
    for m in (1, 8, 9, 16):
        x = activations(m, k, "cuda", seed=800 + m)
        check_bitwise(swiglu_poisoned(x, w), swiglu(awq_gemm(x, w)), f"swiglu {name} [{n}, {k}] M={m} {plan(n, k, w.group, sms)}")
    if name in ("70b", "small"):
        assert_rows_bitwise_invariant(f"swiglu {name}", activations(16, k, "cuda", seed=310),
                                      lambda rows: swiglu_poisoned(rows, w),
                                      lambda m, seed: activations(m, k, "cuda", seed=seed), check_bitwise)


@needs_gpu
def test_awq_swiglu_every_launch_shape_is_bitwise_the_two_kernels():
    """Every (S, C) a block of 2 S warps takes, against awq_gemm at the same (S, C), then swiglu."""
    from swiftspec_core.kernels.norm import swiglu

    w = swiglu_layer("small")
    n, k = w.shape
    for splits in SPLITS[:max(SPLITS) // 2]:
        for cluster in CLUSTERS:
            for m in (1, 9):
                x = activations(m, k, "cuda", seed=710 + m)
                two = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
                launch_shape(x, w, None, two, splits, cluster)
                one = torch.full((m, n // 2), float("nan"), dtype=torch.bfloat16, device="cuda")
                launch_shape(x, w, None, one, splits, cluster, op="awq_swiglu")
                check_bitwise(one, swiglu(two), f"swiglu small M={m} S={splits} C={cluster}")


@needs_gpu
@pytest.mark.parametrize("name", ["70b", "small", "f72"])
def test_awq_swiglu_with_fp16_operands(name):
    """fp16 x: into bf16, bitwise swiglu(awq_gemm(x, w)); into fp16 (the next GEMM's x), SwiGLU of
    the same bf16 GEMM outputs rounded once to fp16 (against torch's silu: within an fp16 ulp)."""
    from swiftspec_core.kernels.awq_gemm import swiglu_operand
    from swiftspec_core.kernels.norm import swiglu

    w = swiglu_layer(name)
    n, k = w.shape
    for m in (1, 8, 9, 16):
        x = activations(m, k, "cuda", seed=820 + m, dtype=torch.float16)
        gate_up = awq_gemm(x, w)
        check_bitwise(swiglu_poisoned(x, w), swiglu(gate_up), f"swiglu {name} M={m} fp16 x, bf16 out")
        out = torch.full((m, n // 2), float("nan"), dtype=torch.float16, device="cuda")
        assert awq_swiglu(x, w, out=out) is out and not out.isnan().any()
        torch.testing.assert_close(out, swiglu_operand(gate_up, torch.float16), rtol=1e-3, atol=1e-6)


# --- GPU: an AWQ engine on the fused kernels ---------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_fused_awq_engine_is_close_to_torch_and_lossless(qkv_bias):
    from engine_fixtures import poison_logits, prompt, target_state
    from swiftspec_core.decoders import DECODERS, SpecSettings
    from swiftspec_core.graphs import PaddedForward
    from swiftspec_core.models.transformer import AWQLinear
    from swiftspec_core.models.weights import build_engine
    from swiftspec_core.tree import tree_mask
    from test_gpu_fused import kernel_args, prefilled

    args = kernel_args(qkv_bias)
    plain = {k: v.float() for k, v in target_state(0, 0.5, args).items()}  # flat: near-ties abound
    aq = awq.quantized_args(args)
    state = awq.quantize_state(plain, aq.quant_group)
    build = lambda kernels: build_engine(aq, state, dtype=torch.bfloat16, device="cuda", max_seq_len=1024,  # noqa: E731
                                         compile=False, kernels=kernels)
    fused = build("fused")
    tiled = [m.packed for m in fused.modules() if isinstance(m, AWQLinear)]
    assert len(tiled) == 4 * args.n_layers and all(isinstance(w, awq.TiledAWQWeight) for w in tiled)
    # use_kernels("fused") tiles in place of the hub's tensors: those are gone once the engine
    # holds the tiled ones (no second copy on the GPU), and a second call tiles nothing anew.
    probe = build("torch")
    held = lambda: [t for m in probe.modules() if isinstance(m, AWQLinear) for t in m.packed[:3]]  # noqa: E731
    hub = [weakref.ref(t) for t in held()]
    probe.use_kernels("fused")
    once = held()
    probe.use_kernels("fused")
    assert all(r() is None for r in hub), "the hub's tensors outlive tiling"
    assert all(a is b for a, b in zip(once, held())), "a second use_kernels('fused') tiled again"
    del probe, once
    ops = build("torch")
    # One 3-token chain after a 40-token prefill: the fused forward (graph, poisoned) against the
    # torch ops' forward on the same AWQ weights (dequantized to bf16 there).
    n, tokens, visible = 40, [5, 9, 200], [[40], [40, 41], [40, 41, 42]]
    cache_f, cache_t = prefilled(fused, n), prefilled(ops, n)
    forward = PaddedForward(fused, cache_f, 8, 8, graph=True)
    poison_logits(forward)
    rows = positions = [n, n + 1, n + 2]
    got = forward(tokens, positions, rows, n, visible).clone()
    dev = lambda x: torch.tensor(x, device="cuda")  # noqa: E731
    ref = ops(dev(tokens), dev(positions), dev(rows), tree_mask(n, n + 3, visible, "cuda"), cache_t)
    err = ((got - ref).norm() / ref.norm()).item()
    print(f"fused vs torch AWQ forward (qkv_bias={qkv_bias}): relative error {err:.3g}")
    assert not got.isnan().any() and err < 2e-2, f"relative error {err:.3g}"
    # Every decoder emits fused ar's tokens on the fused AWQ engine (the draft: another engine on
    # the same weights).
    draft, p = build("fused"), prompt(20)
    ar = DECODERS["ar"](fused, None, p, max_new_tokens=24, eos_ids=set())
    for system, settings in (("chain", SpecSettings(chain_k=3)), ("tree", SpecSettings(tree_bs=8, tree_w=4)),
                             ("swiftspec", SpecSettings(tree_bs=8, tree_w=4, draft_steps=2))):
        got = DECODERS[system](fused, draft, p, max_new_tokens=24, eos_ids=set(), settings=settings)
        first = next((i for i, (a, b) in enumerate(zip(got.tokens, ar.tokens)) if a != b), None)
        assert got.tokens == ar.tokens, f"{system}: first difference at {first}: {got.tokens} vs {ar.tokens}"
