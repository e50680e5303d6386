"""Fixed-width (CUDA-graph shaped) forwards change nothing; replayed acceptance follows its profile."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import engine, perturbed, prompt, target_state
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.replay import Replay, ReplayProfile
from swiftspec_core import graphs


@pytest.fixture(scope="module")
def pair():
    base = target_state()
    return engine(base), engine(perturbed(base, 0.3))


def test_padded_forward_matches_exact(pair, monkeypatch):
    target, draft = pair
    p = prompt()
    exact = {s: DECODERS[s](target, draft, p, max_new_tokens=30, eos_ids=set(),
                            settings=SpecSettings(draft_steps=2)) for s in DECODERS}
    monkeypatch.setattr(graphs, "make_forward", lambda m, c, w, max_visible: graphs.PaddedForward(m, c, w, max_visible, graph=False))
    # The decoders' modules imported make_forward by name: patch where it is used.
    import swiftspec_core.decoders.drafter as drafter_mod
    import swiftspec_core.decoders.verifier as verifier_mod
    monkeypatch.setattr(drafter_mod, "make_forward", graphs.make_forward)
    monkeypatch.setattr(verifier_mod, "make_forward", graphs.make_forward)
    for m in (target, draft):
        m.__dict__.pop("_sides", None)  # sides are kept per model: rebuild them padded
    for system, ref in exact.items():
        got = DECODERS[system](target, draft, p, max_new_tokens=30, eos_ids=set(),
                               settings=SpecSettings(draft_steps=2))
        assert got.tokens == ref.tokens and got.accepted == ref.accepted, system


@pytest.mark.parametrize("n", [20, 200, 600, 990])  # spans 64, 256, 1,001 (the whole cache)
def test_padded_forward_spans_equal_exact(pair, n, monkeypatch):
    """The mask built from the staged block, over the smallest span that holds the tree, gives
    the exact forward's logits and cache rows; padding rows change no row in use."""
    target, _ = pair
    monkeypatch.setattr(graphs, "SPAN_MIN", 64)
    a, b = target.new_cache(1000), target.new_cache(1000)
    padded = graphs.PaddedForward(target, a, 8, 8, graph=False)
    assert padded.spans == [64, 128, 256, 512, 1001]
    for cache in (a, b):
        target.prefill(prompt(n, seed=n), cache)
    gen = torch.Generator().manual_seed(n)
    parents = [-1] + [int(torch.randint(0, i, (), generator=gen)) for i in range(1, 6)]
    visible = [[n]]
    for i in range(1, 6):
        visible.append(visible[parents[i]] + [n + i])
    tokens, rows = torch.randint(0, 384, (6,), generator=gen).tolist(), list(range(n, n + 6))
    before = a.k[:, :n].clone()
    got = padded(tokens, rows, rows, n, visible)
    ref = graphs.ExactForward(target, b)(tokens, rows, rows, n, visible)
    torch.testing.assert_close(got, ref)
    torch.testing.assert_close(a.k[:, :n + 6], b.k[:, :n + 6])
    assert torch.equal(a.k[:, :n], before)


def test_padded_forward_rejects_overflow(pair):
    target, _ = pair
    cache = target.new_cache(32)
    fwd = graphs.PaddedForward(target, cache, 2, 3, graph=False)
    with pytest.raises(ValueError, match="width 2"):
        fwd([0, 0, 0], [0, 1, 2], [0, 1, 2], 0, [[0], [0, 1], [0, 1, 2]])


def test_replay_draws_from_profile_along_best_path(pair):
    target, draft = pair
    profile = ReplayProfile(emitted=(3, 5), bonus_in_tree=(True, False), topk_logprobs=(-0.05, -3.0, -4.0))
    p = prompt()
    for system in ("chain", "tree", "swiftspec"):
        runs = [DECODERS[system](target, draft, p, max_new_tokens=60, eos_ids=set(),
                                 settings=SpecSettings(draft_steps=3), replay=Replay(profile, seed=4))
                for _ in range(2)]
        assert runs[0].tokens == runs[1].tokens and runs[0].accepted == runs[1].accepted  # seeded
        body = runs[0].accepted[:-1]  # the last round is cut by the token budget
        assert set(body) <= {1, 2, 3, 4, 5}, system  # a draw is clipped where the tree is shallower
        if system != "swiftspec":  # chain and serial tree always send a path deep enough for 5
            assert set(body) == {3, 5}, system
        if system != "chain":
            assert any(runs[0].bonus_in_tree) and not all(runs[0].bonus_in_tree), system


def test_replay_profile_needs_rounds():
    with pytest.raises(ValueError):
        Replay(ReplayProfile(emitted=()))


def test_sides_are_reused_across_requests(pair):
    target, draft = pair
    for m in (target, draft):
        m.__dict__.pop("_sides", None)
    a = DECODERS["tree"](target, draft, prompt(seed=5), max_new_tokens=20, eos_ids=set())
    sides = dict(target.__dict__["_sides"])
    b = DECODERS["tree"](target, draft, prompt(seed=5), max_new_tokens=20, eos_ids=set())
    assert a.tokens == b.tokens and a.accepted == b.accepted
    assert target.__dict__["_sides"] == sides  # the same objects: no new caches or graphs
    for m in (target, draft):
        m.__dict__.pop("_sides", None)  # leave exact sides for the other tests
