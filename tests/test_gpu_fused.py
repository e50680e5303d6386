"""On GPU, our kernels as a whole engine (--kernels fused, bf16): a fused forward is close to the
torch ops' forward, a token's logits are bitwise the same whatever forward carries it, and so every
decoder emits exactly fused ar's tokens -- draft = target, a perturbed draft, grafting on and off."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import VOCAB, perturbed, prompt, random_step, random_tree, target_state
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.graphs import PaddedForward
from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.weights import build_engine

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(params=["norms in gemms", "norm kernels"])
def body(request, monkeypatch):
    """Each of the fused forward's layer bodies, whichever forward.norms_in_gemms picks for the model."""
    from swiftspec_core.kernels import forward

    monkeypatch.setattr(forward, "norms_in_gemms", lambda model: request.param == "norms in gemms")
    return request.param


def kernel_args(qkv_bias: bool = False) -> ModelArgs:
    """Small, but at the kernels' real head size (64) and a GQA group of 4."""
    return ModelArgs(dim=512, n_layers=2, n_heads=8, n_kv_heads=2, head_dim=64, ffn_dim=1024, vocab_size=VOCAB,
                     norm_eps=1e-6, rope_theta=500000.0, rope_scaling=None, qkv_bias=qkv_bias,
                     tie_embeddings=False, max_position=2048)


def engine(state: dict, kernels: str, qkv_bias: bool = False):
    return build_engine(kernel_args(qkv_bias), {k: v.float() for k, v in state.items()}, dtype=torch.bfloat16,
                        device="cuda", max_seq_len=1024, compile=False, kernels=kernels)


def state(seed: int = 0, confidence: float = 1.0, qkv_bias: bool = False) -> dict:
    return target_state(seed, confidence, kernel_args(qkv_bias))


def prefilled(model, n: int):
    cache = model.new_cache(256)
    model.prefill(prompt(n), cache)
    return cache


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_fused_forward_is_close_to_torch(qkv_bias, body):
    weights = state(qkv_bias=qkv_bias)
    fused, ops = engine(weights, "fused", qkv_bias), engine(weights, "torch", qkv_bias)
    n, gen = 40, torch.Generator().manual_seed(0)
    cache_f, cache_t = prefilled(fused, n), prefilled(ops, n)
    forward = PaddedForward(fused, cache_f, 8, 8, graph=True)
    for size in (1, 5, 8):  # fresh random trees each time
        got, step = random_step(forward, n, size, gen)
        ref = ops(*step, cache_t)
        err = ((got - ref).norm() / ref.norm()).item()
        assert err < 2e-2, f"size {size}: relative error {err:.3g}"  # bf16: a rounding here and there
        k_err = ((cache_f.k[:, n:n + size].float() - cache_t.k[:, n:n + size].float()).norm()
                 / cache_t.k[:, n:n + size].float().norm()).item()
        assert k_err < 2e-2, f"size {size}: cached keys' relative error {k_err:.3g}"


def test_a_tokens_logits_do_not_depend_on_the_forward(body):
    # One path p0..p3 decoded ar-style (width 1, rows in order), then inside a width-8 tree whose
    # path nodes sit at scattered rows among siblings: the path's logits must be bitwise equal.
    model = engine(state(), "fused")
    n, path = 30, [11, 222, 33, 144]
    cache = prefilled(model, n)
    single = PaddedForward(model, cache, 1, 8, graph=True)
    alone = []
    for i, tok in enumerate(path):
        alone.append(single([tok], [n + i], [n + i], n, [list(range(n, n + i + 1))]).clone())
    # Tree (root first): 0=p0, 1=sibling, 2=p1 (under 0), 3=sibling, 4=sibling, 5=p2 (under 2), 6=sib, 7=p3 (under 5).
    parents = [-1, 0, 0, 1, 2, 2, 0, 5]
    tokens = [path[0], 7, path[1], 8, 9, path[2], 10, path[3]]
    visible = [[n]]
    for i in range(1, 8):
        visible.append(visible[parents[i]] + [n + i])
    positions = [n + len(v) - 1 for v in visible]
    tree = PaddedForward(model, cache, 8, 8, graph=True)
    got = tree(tokens, positions, list(range(n, n + 8)), n, visible)
    for i, node in enumerate([0, 2, 5, 7]):
        assert torch.equal(got[node], alone[i][0]), f"path token {i}: tree row {node} differs from ar's"


CASES = [("chain", "off"), ("tree", "off"), ("tree", "ngram"), ("swiftspec", "off"), ("swiftspec", "ngram")]


@pytest.mark.parametrize("draft_kind", ["same", "perturbed"])
@pytest.mark.parametrize("system, graft", CASES)
def test_decoders_emit_exactly_fused_ars_tokens(system, graft, draft_kind, body):
    # Low confidence: flat next-token distributions, so near-ties abound; with row-invariant
    # kernels no decoder may part from ar at one of them.
    base = state(confidence=0.5)
    target = engine(base, "fused")
    draft = engine(base if draft_kind == "same" else perturbed(base, 0.3), "fused")
    p = prompt(16) * 2  # a prompt that repeats, so grafts fire
    ref = DECODERS["ar"](target, None, p, max_new_tokens=64, eos_ids=set())
    settings = SpecSettings(draft_steps=2, graft=graft)
    got = DECODERS[system](target, draft, p, max_new_tokens=64, eos_ids=set(), settings=settings)
    assert got.tokens == ref.tokens


def test_programmatic_dependent_launch_changes_no_bits(monkeypatch):
    """The captured fused forward with our kernels launched by PDL (the default: each may start
    before the previous one ends and waits inside) and without: bitwise the same logits."""
    from swiftspec_core.kernels import build

    model = engine(state(), "fused")
    n, gen = 40, torch.Generator().manual_seed(1)
    cache = prefilled(model, n)
    _, visible = random_tree(n, 8, gen)
    tokens, rows = torch.randint(0, VOCAB, (8,), generator=gen).tolist(), list(range(n, n + 8))
    positions = [n + len(v) - 1 for v in visible]
    logits = {}
    for pdl in (True, False):
        monkeypatch.setattr(build, "PDL", pdl)
        forward = PaddedForward(model, cache, 8, 8, graph=True)  # captured with this launch mode
        for _ in range(3):  # replays after the capture
            logits[pdl] = forward(tokens, positions, rows, n, visible).clone()
    assert torch.equal(logits[True], logits[False])
