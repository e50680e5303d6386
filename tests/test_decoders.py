"""Every decoder emits exactly the target's greedy tokens, whatever the draft."""
from __future__ import annotations

import pytest

from engine_fixtures import engine, perturbed, prompt, target_state, tiny_args
from swiftspec_core.decoders import DECODERS, SpecSettings

MAX_NEW = 40
SYSTEMS = [("chain", SpecSettings()), ("chain", SpecSettings(chain_k=3)), ("tree", SpecSettings()),
           ("tree", SpecSettings(tree_bs=4, tree_w=2)), ("swiftspec", SpecSettings(draft_steps=1)),
           ("swiftspec", SpecSettings(draft_steps=3)), ("swiftspec", SpecSettings())]


@pytest.fixture(scope="module")
def models():
    base = target_state()
    confident = target_state(confidence=1000.0)
    return {
        "target": engine(base),
        "same": engine(base),
        "perturbed": engine(perturbed(base, 0.3)),
        "unrelated": engine(target_state(seed=7)),
        "confident": engine(confident),
        "qwen2-target": engine(target_state(args=tiny_args(qkv_bias=True)), tiny_args(qkv_bias=True)),
        "qwen2-draft": engine(perturbed(target_state(args=tiny_args(qkv_bias=True)), 0.2), tiny_args(qkv_bias=True)),
    }


@pytest.mark.parametrize("draft", ["same", "perturbed", "unrelated"])
@pytest.mark.parametrize("system,settings", SYSTEMS)
def test_lossless(models, system, settings, draft):
    p = prompt()
    ref = DECODERS["ar"](models["target"], None, p, max_new_tokens=MAX_NEW, eos_ids=set())
    got = DECODERS[system](models["target"], models[draft], p, max_new_tokens=MAX_NEW, eos_ids=set(),
                           settings=settings)
    assert got.tokens == ref.tokens
    assert len(got.tokens) == MAX_NEW
    assert sum(got.accepted) == MAX_NEW - 1  # the prefill emits the first token
    assert all(1 <= a for a in got.accepted)


def test_lossless_qwen2_bias(models):
    p = prompt(seed=3)
    ref = DECODERS["ar"](models["qwen2-target"], None, p, max_new_tokens=MAX_NEW, eos_ids=set())
    for system, settings in SYSTEMS:
        got = DECODERS[system](models["qwen2-target"], models["qwen2-draft"], p, max_new_tokens=MAX_NEW,
                               eos_ids=set(), settings=settings)
        assert got.tokens == ref.tokens, system


def test_partial_and_no_acceptance(models):
    p = prompt()
    for system, settings in SYSTEMS[:4]:
        run = lambda d: DECODERS[system](models["target"], models[d], p, max_new_tokens=MAX_NEW,  # noqa: E731
                                         eos_ids=set(), settings=settings)
        same, partial, none = run("same").mean_accepted, run("perturbed").mean_accepted, run("unrelated").mean_accepted
        assert same >= partial >= none >= 1.0
        assert none < 1.3


def test_full_acceptance_when_draft_is_target(models):
    """A confident target drafting for itself: every round accepts the whole chain or tree path."""
    m, p = models["confident"], prompt(seed=2)
    ref = DECODERS["ar"](m, None, p, max_new_tokens=MAX_NEW, eos_ids=set())
    chain = DECODERS["chain"](m, m, p, max_new_tokens=MAX_NEW, eos_ids=set(), settings=SpecSettings(chain_k=7))
    tree = DECODERS["tree"](m, m, p, max_new_tokens=MAX_NEW, eos_ids=set(), settings=SpecSettings(tree_bs=8))
    swift = DECODERS["swiftspec"](m, m, p, max_new_tokens=MAX_NEW, eos_ids=set(), settings=SpecSettings(draft_steps=3))
    for r in (chain, tree, swift):
        assert r.tokens == ref.tokens
    assert chain.accepted[:-1] == [8] * (len(chain.accepted) - 1)
    assert tree.accepted[:-1] == [8] * (len(tree.accepted) - 1)
    # The parallel draft re-roots inside its own tree every time (the bonus was always drafted),
    # and after the first round (a one-step tree) it stays d = 3 levels ahead at least.
    assert all(swift.bonus_in_tree)
    assert min(swift.accepted[1:-1]) >= 3


def test_eos_and_budget(models):
    p = prompt()
    ref = DECODERS["ar"](models["target"], None, p, max_new_tokens=MAX_NEW, eos_ids=set())
    eos = ref.tokens[10]
    stop = ref.tokens.index(eos) + 1
    for system, settings in SYSTEMS:
        got = DECODERS[system](models["target"], models["perturbed"], p, max_new_tokens=MAX_NEW, eos_ids={eos},
                               settings=settings)
        assert got.tokens == ref.tokens[:stop], system
        short = DECODERS[system](models["target"], models["same"], p, max_new_tokens=5, eos_ids=set(),
                                 settings=settings)
        assert short.tokens == ref.tokens[:5], system
    one = DECODERS["chain"](models["target"], models["same"], p, max_new_tokens=1, eos_ids=set())
    assert one.tokens == ref.tokens[:1] and one.rounds == 0


def test_draft_steps_fill_the_verification():
    from swiftspec_core.decoders.base import draft_steps_for

    assert draft_steps_for(5.3e-3, 1.8e-3) == 3  # 2.9 steps fit: the third ends 0.1 step late
    assert draft_steps_for(5.3e-3, 2.9e-3) == 2
    assert draft_steps_for(5.3e-3, 4.0e-3) == 1
    assert draft_steps_for(1e-3, 5e-3) == 1  # a slow draft still takes one step a round
