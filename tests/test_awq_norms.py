"""The RMSNorms of a one-GPU AWQ forward in the GEMMs' epilogues (swiftspec_core/kernels/awq_norms.py).

CPU: the references' formulation against float64 RMSNorm math, and the forward body with every
kernel replaced by its reference against the model's own forward. GPU: the kernel against the
references, outputs poisoned first, rows bitwise invariant."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import VOCAB
from test_fused_forward import fused_equals_exact
from swiftspec_core.graphs import PaddedForward
from swiftspec_core.kernels import attention, awq_gemm, awq_norms, forward, gemm, norm
from swiftspec_core.models import awq, transformer
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.weights import build_engine, random_state

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def packed(n: int, k: int, seed: int, device="cpu") -> awq.AWQWeight:
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(seed))
    return awq.quantize(w.to(device), 64)


@pytest.mark.parametrize("unit", [1.0, 4.0])
def test_references_compute_rmsnorm_then_the_projection(unit):
    """The GEMM before writes x = h * g / unit and h's sums by tile; the GEMM after, r unit times x @
    W.T: that is rmsnorm(h; g) @ W.T (float64 inputs, no rounding to a narrower type; the references
    sum in fp32, as the kernel)."""
    gen = torch.Generator().manual_seed(0)
    m, k, n = 5, 192, 128
    h0, o_in = torch.randn(m, k, generator=gen, dtype=torch.float64), torch.randn(m, 64, generator=gen,
                                                                                  dtype=torch.float64)
    w_o, w_next = packed(k, 64, 1), packed(n, k, 2)
    g = torch.rand(k, generator=gen, dtype=torch.float64) + 0.5
    nxt = awq_norms.NextNorm(g, torch.empty(m, k, dtype=torch.float64), torch.full((k // 64, 16), float("nan"),
                                                                                 dtype=torch.float64), unit)
    h = awq_norms.awq_gemm_norms_reference(o_in, w_o, residual=h0, next_norm=nxt)
    want_h = h0 + o_in @ awq.dequantize(w_o, torch.float64).T
    close = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(h, want_h, **close)
    torch.testing.assert_close(nxt.x, want_h * g / unit, **close)
    torch.testing.assert_close(nxt.sums[:, :m].T, want_h.square().view(m, k // 64, 64).sum(-1), **close)
    eps = 1e-6
    got = awq_norms.awq_gemm_norms_reference(nxt.x, w_next, row_sums=nxt.sums, eps=eps, x_unit=unit)
    normed = want_h * torch.rsqrt(want_h.square().mean(-1, keepdim=True) + eps) * g
    torch.testing.assert_close(got, normed @ awq.dequantize(w_next, torch.float64).T, **close)


def massive(m: int, k: int, gen: torch.Generator, value: float = 3e4, g_there: float = 3.0):
    """A residual h [M, K] (bf16) with one channel near `value` in every row, as a real model's
    massive activations, and norm weights g [K] (bf16) in [0.5, 1.5) but g_there on that channel:
    h * g passes fp16's 65504 there."""
    h = torch.randn(m, k, generator=gen)
    h[:, 7] += value
    g = torch.rand(k, generator=gen) + 0.5
    g[7] = g_there
    return h.to(torch.bfloat16), g.to(torch.bfloat16)


def test_fp16_x_holds_h_times_g_past_65504_over_its_unit():
    """A massive channel (3e4) times g = 3 passes fp16's range: the next x in fp16 over unit 4 holds
    it and the GEMM after computes rmsnorm(h; g) @ W.T as in float64; over unit 1 it saturates at
    65504 and the output is far off (references, CPU)."""
    gen = torch.Generator().manual_seed(3)
    m, k, n = 4, 256, 128
    h, g = massive(m, k, gen)
    w_next = packed(n, k, 5)
    wide = h.double()
    eps = 1e-6
    truth = (wide * torch.rsqrt(wide.square().mean(-1, keepdim=True) + eps) * g.double()) @ \
        awq.dequantize(w_next, torch.float64).T
    errors = {}
    for unit in (1.0, 4.0):
        nxt = awq_norms.NextNorm(g, torch.empty(m, k, dtype=torch.float16), awq_norms.norm_sums(k, "cpu"), unit)
        # the producer's step: x = h * g / unit (h the GEMM's output: here a zero projection over the residual)
        awq_norms.awq_gemm_norms_reference(torch.zeros(m, 64, dtype=torch.bfloat16), packed(k, 64, 6), residual=h,
                                           next_norm=nxt)
        assert bool((nxt.x.float().abs().amax() == awq_gemm.FP16_MAX)) is (unit == 1.0)
        got = awq_norms.awq_gemm_norms_reference(nxt.x, w_next, row_sums=nxt.sums, eps=eps, x_unit=unit)
        errors[unit] = ((got.double() - truth).norm() / truth.norm()).item()
    assert errors[4.0] < 1e-2 < 0.1 < errors[1.0], errors


def test_units_are_powers_of_two():
    assert all(awq_norms.is_unit(u) for u in (1.0, 2.0, 4.0, 0.5, 2.0 ** 40))
    assert not any(awq_norms.is_unit(u) for u in (0.0, -2.0, 3.0, 1.5, float("inf"), float("nan")))


def test_norm_x_unit_covers_every_norm_weight():
    """The power of two >= 1 and >= every |g|: 1 for random_state's norms of ones, 2 for norms in
    [1, 2), 4 where one weight is -3; the final norm (a kernel of its own) does not count."""
    model = awq_model(False)
    assert transformer.norm_x_unit(model) == 2.0 == model.norm_x_unit  # build_engine's use_kernels set it
    model.layers[1].mlp_norm.data[3] = -3.0
    model.norm.data[0] = 100.0
    assert transformer.norm_x_unit(model) == 4.0
    args = model.args.with_(quant="none")
    plain = build_engine(args, random_state(args, torch.float32, seed=0), dtype=torch.float32, max_seq_len=64)
    assert plain.norm_x_unit == 1.0


def awq_model(qkv_bias: bool, dtype: torch.dtype = torch.float32):
    args = ModelArgs(dim=128, n_layers=3, n_heads=4, n_kv_heads=2, head_dim=32, ffn_dim=192, vocab_size=VOCAB,
                     norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, qkv_bias=qkv_bias,
                     tie_embeddings=False, max_position=512)
    gen = torch.Generator().manual_seed(4)
    # Norm weights of their own (random_state's are ones), so that a norm's weight cannot stand in for another's.
    plain = {k: v * 3 if "norm" not in k else v + torch.rand(v.shape, generator=gen)
             for k, v in random_state(args, torch.float32, seed=4).items()}
    group = awq.group_for(args)
    return build_engine(args.with_(quant="awq", quant_group=group), awq.quantize_state(plain, group),
                        dtype=dtype, max_seq_len=256)


@pytest.fixture
def references(monkeypatch):
    for name, ref in (("gemm", gemm.gemm_reference), ("tree_attention", attention.tree_attention_reference),
                      ("rmsnorm", norm.rmsnorm_reference), ("awq_gemm", awq_gemm.awq_gemm_reference),
                      ("awq_gemm_norms", awq_norms.awq_gemm_norms_reference),
                      ("awq_swiglu_norms", awq_norms.awq_swiglu_norms_reference)):
        monkeypatch.setattr(forward, name, ref)


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_awq_body_with_references_equals_the_model(references, qkv_bias):
    model = awq_model(qkv_bias)
    model.kernels = "fused"  # use_kernels refuses the CPU: the references stand in for the kernels
    assert forward.awq_norms_in_epilogues(model)
    fused_equals_exact(model, seed=1)


def test_fp16_x_is_what_the_forward_feeds(monkeypatch):
    """forward.AWQ_FP16_X (the kernel rows' fp16 x) names the projections whose x the one-GPU AWQ
    forward of a bf16 model writes in fp16, every layer after the first (its qkv reads the first
    norm kernel's bf16); the references stand in for the kernels, on the CPU."""
    model = awq_model(False, dtype=torch.bfloat16)
    projection = {forward.weight_of(getattr(layer, name)).qweight.data_ptr(): p for layer in model.layers[1:]
                  for name, p in (("wqkv", "qkv"), ("wo", "o"), ("w_gate_up", "gate_up"), ("w_down", "down"))}
    seen: dict[str, set] = {}

    def recorded(reference):
        def call(x, w, *args, **kwargs):
            if w.qweight.data_ptr() in projection:
                seen.setdefault(projection[w.qweight.data_ptr()], set()).add(x.dtype)
            return reference(x, w, *args, **kwargs)
        return call

    for name, ref in (("gemm", gemm.gemm_reference), ("tree_attention", attention.tree_attention_reference),
                      ("rmsnorm", norm.rmsnorm_reference), ("awq_gemm", recorded(awq_gemm.awq_gemm_reference)),
                      ("awq_gemm_norms", recorded(awq_norms.awq_gemm_norms_reference)),
                      ("awq_swiglu_norms", recorded(awq_norms.awq_swiglu_norms_reference))):
        monkeypatch.setattr(forward, name, ref)
    model.kernels = "fused"
    assert forward.awq_norms_in_epilogues(model)
    cache = model.new_cache(64)
    model.prefill(list(range(1, 9)), cache)
    PaddedForward(model, cache, 8, 8, graph=False)([5, 6], [8, 9], [8, 9], 8, [[8], [8, 9]])
    assert seen == {p: {torch.float16 if p in forward.AWQ_FP16_X else torch.bfloat16} for p in ("qkv", "o", "gate_up", "down")}


@pytest.mark.parametrize("quant,tp,dim,want", [("awq", 1, 8192, True), ("awq", 2, 8192, False),
                                               ("none", 1, 2048, False), ("awq", 1, 1000, False)])
def test_awq_norms_in_epilogues_rule(quant, tp, dim, want):
    from types import SimpleNamespace

    model = SimpleNamespace(args=SimpleNamespace(dim=dim, quant=quant), group=SimpleNamespace(size=tp))
    assert forward.awq_norms_in_epilogues(model) is want


# --- GPU ------------------------------------------------------------------------------------------

def _weight(n: int, k: int, seed: int) -> awq.TiledAWQWeight:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return awq.tile(awq.quantize(torch.randn(n, k, generator=g, device="cuda"), 128))


@needs_gpu
@pytest.mark.parametrize("next_dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("n,k", [(8192, 8192), (8192, 28672), (1024, 512)])
def test_producer_and_consumer_match_references(n, k, next_dtype):
    """o / down (the residual, the next norm's x and sums) at 70B shapes and a small one, then a
    qkv-like consumer (row sums, a bias), every M: the kernels (outputs poisoned) close to the
    references, and each row's bits those of the same row in the M = 16 call. next_dtype: the next
    x's (fp16: written for, and read by, the fp16-operand kernel)."""
    from test_kernel_awq_gemm import check_bitwise

    gen = torch.Generator(device="cuda").manual_seed(n + k)
    randn = lambda *shape: torch.randn(*shape, generator=gen, device="cuda").to(torch.bfloat16)  # noqa: E731
    w, w_next = _weight(n, k, seed=1), _weight(1280, n, seed=2)  # w_next: N = 1280 (20 tiles)
    x16, h16, bias = randn(16, k), randn(16, n), randn(1280)
    g = (torch.rand(n, generator=gen, device="cuda") + 0.5).to(torch.bfloat16)
    full = None
    for m in (16, 1, 8, 9):
        x, h = x16[:m].contiguous(), h16[:m].clone()
        poisoned = awq_norms.NextNorm(g, torch.full((m, n), float("nan"), dtype=next_dtype, device="cuda"),
                                      torch.full((n // 64, 16), float("nan"), device="cuda"))
        ref = awq_norms.NextNorm(g, torch.empty(m, n, dtype=next_dtype, device="cuda"),
                                 torch.zeros(n // 64, 16, device="cuda"))
        ref_h = awq_norms.awq_gemm_norms_reference(x, w, residual=h, next_norm=ref)
        got_h = awq_norms.awq_gemm_norms(x, w, out=h, residual=h, next_norm=poisoned)
        torch.cuda.synchronize()
        assert got_h is h and not h.isnan().any() and not poisoned.x.isnan().any()
        assert not poisoned.sums[:, :m].isnan().any()
        assert (h.float() - ref_h.float()).abs().max() <= 2e-2 * ref_h.float().abs().max(), f"residual M={m}"
        assert (poisoned.x.float() - ref.x.float()).abs().max() <= 2e-2 * ref.x.float().abs().max(), f"x M={m}"
        torch.testing.assert_close(poisoned.sums[:, :m], ref.sums[:, :m], rtol=2e-2, atol=1e-3)
        out = torch.full((m, 1280), float("nan"), dtype=torch.bfloat16, device="cuda")
        got = awq_norms.awq_gemm_norms(poisoned.x, w_next, bias, out=out, row_sums=poisoned.sums, eps=1e-5)
        want = awq_norms.awq_gemm_norms_reference(poisoned.x, w_next, bias, row_sums=poisoned.sums, eps=1e-5)
        torch.cuda.synchronize()
        assert got is out and not out.isnan().any()
        assert (out.float() - want.float()).abs().max() <= 2e-2 * want.float().abs().max(), f"consumer M={m}"
        if full is None:
            full = (h, poisoned.x, poisoned.sums.clone(), out)
            continue
        check_bitwise(h, full[0][:m], f"residual rows at M={m}")
        check_bitwise(poisoned.x, full[1][:m], f"next x rows at M={m}")
        assert torch.equal(poisoned.sums[:, :m], full[2][:, :m]), f"sums at M={m}"
        check_bitwise(out, full[3][:m], f"consumer rows at M={m}")


@needs_gpu
def test_swiglu_consumer_is_bitwise_swiglu_of_the_gemm():
    """awq_swiglu_norms: bitwise swiglu(awq_gemm_norms) with the same row sums (the 70B gate_up)."""
    from test_kernel_awq_gemm import check_bitwise

    w = _weight(2 * 28672, 8192, seed=3)
    gen = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(8, 8192, generator=gen, device="cuda").to(torch.bfloat16)
    sums = torch.rand(128, 16, generator=gen, device="cuda") * 8192
    fused = awq_norms.awq_swiglu_norms(x, w, row_sums=sums, eps=1e-5)
    two = norm.swiglu(awq_norms.awq_gemm_norms(x, w, row_sums=sums, eps=1e-5))
    check_bitwise(fused, two, "swiglu consumer")
    # fp16 x (the one-GPU forward's): out in x's dtype, as the reference
    x16 = x.to(torch.float16)
    fused = awq_norms.awq_swiglu_norms(x16, w, row_sums=sums, eps=1e-5)
    want = awq_norms.awq_swiglu_norms_reference(x16, w, row_sums=sums, eps=1e-5)
    assert fused.dtype == want.dtype == torch.float16
    assert (fused.float() - want.float()).abs().max() <= 2e-2 * want.float().abs().max(), "fp16 swiglu consumer"


@needs_gpu
def test_kernels_hold_h_times_g_past_65504_over_its_unit():
    """The 70B's o_proj writing the next norm's fp16 x of a residual with a massive channel (3e4, g = 3
    there), then a qkv-like consumer: over unit 4 the kernels are close to the references (outputs
    poisoned first) and to the float64 norm; over unit 1 both saturate and the output is far off."""
    gen = torch.Generator().manual_seed(7)
    n, k = 8192, 8192
    w, w_next = _weight(n, k, seed=1), _weight(1280, n, seed=2)
    h0, g = massive(8, n, gen)
    h0, g = h0.cuda(), g.cuda()
    x = torch.randn(8, k, generator=gen).to(torch.bfloat16).cuda()
    errors = {}
    for unit in (1.0, 4.0):
        h = h0.clone()
        nxt = awq_norms.NextNorm(g, torch.full((8, n), float("nan"), dtype=torch.float16, device="cuda"),
                                 torch.full((n // 64, 16), float("nan"), device="cuda"), unit)
        ref = awq_norms.NextNorm(g, torch.empty(8, n, dtype=torch.float16, device="cuda"),
                                 torch.zeros(n // 64, 16, device="cuda"), unit)
        ref_h = awq_norms.awq_gemm_norms_reference(x, w, residual=h0, next_norm=ref)
        awq_norms.awq_gemm_norms(x, w, out=h, residual=h, next_norm=nxt)
        out = torch.full((8, 1280), float("nan"), dtype=torch.bfloat16, device="cuda")
        awq_norms.awq_gemm_norms(nxt.x, w_next, out=out, row_sums=nxt.sums, eps=1e-5, x_unit=unit)
        want = awq_norms.awq_gemm_norms_reference(nxt.x, w_next, row_sums=nxt.sums, eps=1e-5, x_unit=unit)
        torch.cuda.synchronize()
        assert not out.isnan().any() and not nxt.x.isnan().any() and not nxt.x.isinf().any()
        assert bool(nxt.x.float().abs().amax() == awq_gemm.FP16_MAX) is (unit == 1.0)
        assert (nxt.x.float() - ref.x.float()).abs().max() <= 2e-2 * ref.x.float().abs().max(), f"x, unit {unit}"
        assert (out.float() - want.float()).abs().max() <= 2e-2 * want.float().abs().max(), f"consumer, unit {unit}"
        wide = ref_h.double()
        truth = (wide * torch.rsqrt(wide.square().mean(-1, keepdim=True) + 1e-5) * g.double()) @ \
            awq.dequantize(w_next, torch.float64).T
        errors[unit] = ((out.double() - truth).norm() / truth.norm()).item()
    assert errors[4.0] < 2e-2 < 0.1 < errors[1.0], errors


def massive_model(device: str):
    """kernel_args' AWQ model whose embedding carries one massive channel (3e4) and whose layer norm
    weights are 3 there (norm_x_unit 4), the final norm's 1e-3 (else that channel's share of every
    logit hides the other channels' errors), bf16, with the torch ops' logits of a 3-token chain
    after a 40-token prefix: (model, ref, (tokens, positions, visible, n))."""
    from engine_fixtures import target_state
    from swiftspec_core.tree import tree_mask
    from test_gpu_fused import kernel_args, prefilled

    args = kernel_args()
    plain = {k: v.float() for k, v in target_state(0, 0.5, args).items()}
    gen = torch.Generator().manual_seed(11)
    plain["embed"][:, 7] += 3e4
    for name in [k for k in plain if k.endswith("attn_norm") or k.endswith("mlp_norm")]:
        plain[name] = torch.rand(args.dim, generator=gen) + 0.5
        plain[name][7] = 3.0
    plain["norm"][7] = 1e-3
    aq = awq.quantized_args(args)
    state = awq.quantize_state(plain, aq.quant_group)
    build = lambda kernels: build_engine(aq, state, dtype=torch.bfloat16, device=device, max_seq_len=1024,  # noqa: E731
                                         compile=False, kernels=kernels)
    ops = build("torch")
    n, tokens, visible = 40, [5, 9, 200], [[40], [40, 41], [40, 41, 42]]
    positions = [n, n + 1, n + 2]
    dev = lambda x: torch.tensor(x, device=device)  # noqa: E731
    ref = ops(dev(tokens), dev(positions), dev(positions), tree_mask(n, n + 3, visible, device), prefilled(ops, n))
    del ops
    return build("fused" if device == "cuda" else "torch"), ref, (tokens, positions, visible, n)


def massive_errors(model, ref, chain, graph: bool) -> dict[float, float]:
    """The fused forward's relative error against ref at norm_x_unit 4 (the model's) and forced to 1."""
    from engine_fixtures import poison_logits
    from test_gpu_fused import prefilled

    tokens, positions, visible, n = chain
    assert model.norm_x_unit == 4.0
    errors = {}
    for unit in (4.0, 1.0):
        model.norm_x_unit = unit
        run = PaddedForward(model, prefilled(model, n), 8, 8, graph=graph)
        if graph:
            poison_logits(run)
        got = run(tokens, positions, positions, n, visible).clone()
        assert not got.isnan().any()
        errors[unit] = ((got - ref).norm() / ref.norm()).item()
    return errors


def test_awq_body_holds_a_massive_channel_over_its_unit(references):
    """massive_model: the one-GPU AWQ body (references for the kernels, fp16 x) within 2e-2 of the
    torch ops over norm_x_unit 4; forced to unit 1 the next x's saturate and it is far off."""
    model, ref, chain = massive_model("cpu")
    model.kernels = "fused"  # use_kernels refuses the CPU: the references stand in for the kernels
    errors = massive_errors(model, ref, chain, graph=False)
    assert errors[4.0] < 2e-2 < 0.1 < errors[1.0], errors


@needs_gpu
def test_fused_awq_forward_holds_a_massive_channel_over_its_unit():
    """As the CPU test above, on the kernels (graph replays, logits poisoned first)."""
    model, ref, chain = massive_model("cuda")
    assert forward.awq_norms_in_epilogues(model)
    errors = massive_errors(model, ref, chain, graph=True)
    print(f"fused vs torch AWQ forward, massive channel: relative error by unit {errors}")
    assert errors[4.0] < 2e-2 < 0.1 < errors[1.0], errors
