"""The fused forward's wiring on CPU: kernels/forward.py with every kernel replaced by its torch
reference must compute what the model's own forward computes (fp32), through graphs.PaddedForward
as the decoders call it: tree masks from the staged block, RoPE at each position, the cache rows."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import VOCAB, prompt, target_state
from swiftspec_core.graphs import ExactForward, PaddedForward
from swiftspec_core.kernels import attention, forward, gemm, gemm_epilogue, norm
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.weights import build_engine


def args(qkv_bias: bool) -> ModelArgs:
    return ModelArgs(dim=128, n_layers=2, n_heads=4, n_kv_heads=2, head_dim=64, ffn_dim=192, vocab_size=VOCAB,
                     norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, qkv_bias=qkv_bias,
                     tie_embeddings=False, max_position=2048)


@pytest.fixture
def references(monkeypatch):
    for name, ref in (("gemm", gemm.gemm_reference), ("tree_attention", attention.tree_attention_reference),
                      ("add_rmsnorm", norm.add_rmsnorm_reference), ("rmsnorm", norm.rmsnorm_reference),
                      ("gemm_swiglu", gemm_epilogue.gemm_swiglu_reference)):
        monkeypatch.setattr(forward, name, ref)


@pytest.mark.parametrize("norms_in_gemms", [True, False])
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_fused_forward_with_references_equals_the_model(references, monkeypatch, qkv_bias, norms_in_gemms):
    monkeypatch.setattr(forward, "norms_in_gemms", lambda model: norms_in_gemms)  # each layer body
    a = args(qkv_bias)
    model = build_engine(a, target_state(args=a), dtype=torch.float32, max_seq_len=256)
    model.kernels = "fused"  # use_kernels refuses the CPU: the references stand in for the kernels
    fused_equals_exact(model)


def fused_equals_exact(model, seed: int = 0) -> None:
    """The model's fused forward (its kernels' references standing in) against its own forward, on
    random trees of 1, 6 and 8 tokens after a 20-token prefill: the logits and the caches."""
    n, gen = 20, torch.Generator().manual_seed(seed)
    caches = [model.new_cache(128), model.new_cache(128)]
    for cache in caches:
        model.prefill(prompt(n), cache)
    fused, exact = PaddedForward(model, caches[0], 8, 8, graph=False), ExactForward(model, caches[1])
    for size in (1, 6, 8):
        parents = [-1] + [int(torch.randint(0, i, (), generator=gen)) for i in range(1, size)]
        visible = [[n]]
        for i in range(1, size):
            visible.append(visible[parents[i]] + [n + i])
        tokens = torch.randint(0, VOCAB, (size,), generator=gen).tolist()
        positions, rows = [n + len(v) - 1 for v in visible], list(range(n, n + size))
        got, ref = fused(tokens, positions, rows, n, visible), exact(tokens, positions, rows, n, visible)
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(caches[0].k[:, : n + size], caches[1].k[:, : n + size], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(caches[0].v[:, : n + size], caches[1].v[:, : n + size], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("preset,quant,tp,want", [
    ("llama-3.2-1b", "none", 1, True), ("llama-3.2-3b", "none", 1, True), ("qwen2.5-coder-0.5b", "none", 1, True),
    ("llama-3-8b", "none", 1, False), ("llama-3.2-1b", "awq", 1, False), ("llama-3.2-1b", "none", 2, False)])
def test_norms_in_gemms_rule(preset, quant, tp, want):
    """The body the fused forward runs: the norms inside the GEMMs for bf16 on one GPU up to width
    3072 (measured faster there, slower at Llama-3-8B's 4096: NOTES v59-v61), else norm kernels."""
    from types import SimpleNamespace

    from swiftspec_bench.kernel_shapes import shard_args

    a = SimpleNamespace(dim=shard_args(preset, 1).dim, quant=quant)
    assert forward.norms_in_gemms(SimpleNamespace(args=a, group=SimpleNamespace(size=tp))) is want
