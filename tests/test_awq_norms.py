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
from swiftspec_core.models import awq
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.weights import build_engine, random_state

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def packed(n: int, k: int, seed: int, device="cpu") -> awq.AWQWeight:
    w = torch.randn(n, k, generator=torch.Generator().manual_seed(seed))
    return awq.quantize(w.to(device), 64)


def test_references_compute_rmsnorm_then_the_projection():
    """The GEMM before writes x = h * g and h's sums by tile; the GEMM after, r times x @ W.T: that
    is rmsnorm(h; g) @ W.T (float64 inputs, no rounding to a narrower type; the references sum in fp32,
    as the kernel)."""
    gen = torch.Generator().manual_seed(0)
    m, k, n = 5, 192, 128
    h0, o_in = torch.randn(m, k, generator=gen, dtype=torch.float64), torch.randn(m, 64, generator=gen,
                                                                                  dtype=torch.float64)
    w_o, w_next = packed(k, 64, 1), packed(n, k, 2)
    g = torch.rand(k, generator=gen, dtype=torch.float64) + 0.5
    nxt = awq_norms.NextNorm(g, torch.empty(m, k, dtype=torch.float64), torch.full((k // 64, 16), float("nan"),
                                                                                 dtype=torch.float64))
    h = awq_norms.awq_gemm_norms_reference(o_in, w_o, residual=h0, next_norm=nxt)
    want_h = h0 + o_in @ awq.dequantize(w_o, torch.float64).T
    close = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(h, want_h, **close)
    torch.testing.assert_close(nxt.x, want_h * g, **close)
    torch.testing.assert_close(nxt.sums[:, :m].T, want_h.square().view(m, k // 64, 64).sum(-1), **close)
    eps = 1e-6
    got = awq_norms.awq_gemm_norms_reference(nxt.x, w_next, row_sums=nxt.sums, eps=eps)
    normed = want_h * torch.rsqrt(want_h.square().mean(-1, keepdim=True) + eps) * g
    torch.testing.assert_close(got, normed @ awq.dequantize(w_next, torch.float64).T, **close)


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
