"""The persistent kernel's target build (swiftspec_core/kernels/persistent_target.py): on the CPU,
which models and widths take it and its rings; on a GPU (skipped without one), at Llama-3-8B's
layer shapes, its logits against the torch ops', a token's logits bitwise the same whatever forward
carries it (width 1 in position order, or a tree's node at a scattered row), and every decoder
emitting exactly ar's tokens on it."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from engine_fixtures import VOCAB, perturbed, prompt, random_step, target_state
from swiftspec_core.kernels import persistent_forward as pf
from swiftspec_core.kernels import persistent_target as pt
from swiftspec_core.kernels.persistent import LLAMA_8B, SHARED_MAX, shared_bytes
from swiftspec_core.models.args import ModelArgs
from test_persistent_forward import (assert_emits_ars_tokens, gpu_engine as engine_with_args, one_b_args,
                                     persistent_close_to_fp32)


def eight_b_args(layers: int = 1) -> ModelArgs:
    """Llama-3-8B's layer shapes (the target build's), a few layers and a small vocabulary."""
    return ModelArgs(dim=4096, n_layers=layers, n_heads=32, n_kv_heads=8, head_dim=128, ffn_dim=14336,
                     vocab_size=VOCAB, norm_eps=1e-5, rope_theta=500000.0, rope_scaling=None, qkv_bias=False,
                     tie_embeddings=False, max_position=2048)


def test_the_persistent_forward_takes_both_builds_shapes():
    assert pf.unsupported_shape(eight_b_args()) is None and pf.is_target(eight_b_args())
    assert pf.unsupported_shape(one_b_args()) is None and not pf.is_target(one_b_args())
    assert "bias" in pf.unsupported_shape(dataclasses.replace(eight_b_args(), qkv_bias=True))
    assert "shapes" in pf.unsupported_shape(dataclasses.replace(eight_b_args(), head_dim=64, n_heads=64))


def test_each_width_gets_the_deepest_ring_that_fits():
    for width in range(1, 17):
        depth = pt.ring_depth(width)
        assert shared_bytes(pf.PAGE_K, depth, width, LLAMA_8B, target=True) + pt.STATIC_RESERVE <= SHARED_MAX
        assert all(shared_bytes(pf.PAGE_K, d, width, LLAMA_8B, target=True) + pt.STATIC_RESERVE > SHARED_MAX
                   for d in pt.DEPTHS if d > depth)
    assert [pt.ring_depth(w) for w in (1, 8, 9, 12, 13, 16)] == [4, 4, 3, 3, 2, 2]


def test_each_build_refuses_the_others_model():
    def fake(args):
        return SimpleNamespace(args=args, device=torch.device("cuda"), dtype=torch.bfloat16,
                               group=SimpleNamespace(size=1))

    with pytest.raises(ValueError, match="Llama-3-8B's shapes"):
        pt.PersistentTarget(fake(one_b_args()), None, 8)
    with pytest.raises(ValueError, match="target build"):
        pf.PersistentLayers(fake(eight_b_args()), None, 8)


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def gpu_engine(state: dict, kernels: str):
    return engine_with_args(state, kernels, args=eight_b_args())


@gpu
def test_its_logits_are_as_close_to_fp32_as_the_torch_ops_in_bf16():
    persistent_close_to_fp32(eight_b_args(), width=8, max_visible=8)


@gpu
def test_its_attention_is_the_fused_kernels_bit_for_bit():
    # Phases T and M run attention.cu's own items and merge: on the qkv phase Q wrote, over the same
    # cache, the standalone kernel must give the same output and append the same rows, bit for bit
    # (where the two part, the port broke an order; the logits tests cannot say where).
    from swiftspec_core.graphs import PaddedForward
    from swiftspec_core.kernels.attention import tree_attention

    model = gpu_engine(target_state(0, 1.0, eight_b_args()), "persistent")
    n, gen = 300, torch.Generator().manual_seed(3)
    cache = model.new_cache(512)
    model.prefill(prompt(n), cache)
    before_k, before_v = cache.k.clone(), cache.v.clone()
    forward = PaddedForward(model, cache, 8, 8, graph=False)
    random_step(forward, n, 6, gen)
    target, block = forward.persistent, forward.inputs
    span = forward.span_for(n + 6)
    out = tree_attention(target.qkv[0], block, model.cos, model.sin, before_k[0], before_v[0], span, 32, 8,
                         append=True)
    assert torch.equal(out, target.attn[0]), "phase T / M's output differs from attention.cu's"
    assert torch.equal(before_k[0, :n + 6], cache.k[0, :n + 6]) and torch.equal(before_v[0, :n + 6], cache.v[0, :n + 6])


@gpu
def test_a_tokens_logits_do_not_depend_on_the_forward():
    # One path decoded ar-style (width 1, rows in order), then inside a width-8 tree whose path nodes
    # sit at scattered rows among siblings: bitwise the same logits.
    from swiftspec_core.graphs import PaddedForward

    model = gpu_engine(target_state(0, 1.0, eight_b_args()), "persistent")
    n, path = 30, [11, 222, 33, 144]
    cache = model.new_cache(256)
    model.prefill(prompt(n), cache)
    single = PaddedForward(model, cache, 1, 8, graph=True)
    alone = [single([tok], [n + i], [n + i], n, [list(range(n, n + i + 1))]).clone() for i, tok in enumerate(path)]
    parents = [-1, 0, 0, 1, 2, 2, 0, 5]  # path nodes 0, 2, 5, 7
    tokens = [path[0], 7, path[1], 8, 9, path[2], 10, path[3]]
    visible = [[n]]
    for i in range(1, 8):
        visible.append(visible[parents[i]] + [n + i])
    tree = PaddedForward(model, cache, 8, 8, graph=True)
    got = tree(tokens, [n + len(v) - 1 for v in visible], list(range(n, n + 8)), n, visible)
    for i, node in enumerate([0, 2, 5, 7]):
        assert torch.equal(got[node], alone[i][0]), f"path token {i}: tree row {node} differs from ar's"


@gpu
@pytest.mark.parametrize("system", ["chain", "tree", "swiftspec"])
def test_decoders_on_a_persistent_target_emit_ars_tokens(system):
    base = target_state(0, 0.5, eight_b_args())
    target, draft = gpu_engine(base, "persistent"), gpu_engine(perturbed(base, 0.3), "persistent")
    assert_emits_ars_tokens(system, target, draft, 40)

