"""What the losslessness check rests on: margins per emitted token, the target's bonus as every
round's root, one d rule, and a draft that is the target's weights (plus noise where asked)."""
from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from engine_fixtures import engine, perturbed, prompt, target_state
from swiftspec_bench.cli import app
from swiftspec_core.decoders import DECODERS, SpecSettings, swiftspec
from swiftspec_core.decoders.base import DecodeResult, measure_draft_steps
from swiftspec_core.decoders.verifier import Verifier
from swiftspec_core.errors import UserError
from swiftspec_core.models import noise
from swiftspec_core.models.loading import load_model
from swiftspec_core.replay import Replay, ReplayProfile

MAX_NEW = 24


@pytest.fixture(scope="module")
def pair():
    base = target_state()
    return engine(base), engine(perturbed(base, 0.3))


def full_margins(target, p: list[int], tokens: list[int]) -> tuple[list[float], list[int]]:
    """Each emitted token's top-2 margin and runner-up token from one causal forward over the
    prompt and the answer."""
    n = len(p) + len(tokens)
    pos = torch.arange(n)
    logits = target(torch.tensor(p + tokens), pos, pos, None, target.new_cache(n), eager=True)
    top = logits[len(p) - 1: n - 1].topk(2)
    return (top.values[:, 0] - top.values[:, 1]).tolist(), top.indices[:, 1].tolist()


@pytest.mark.parametrize("system", ["ar", "chain", "tree", "swiftspec"])
def test_margins_are_the_targets_at_each_emitted_token(pair, system):
    target, draft = pair
    p = prompt()
    got = DECODERS[system](target, draft, p, max_new_tokens=MAX_NEW, eos_ids=set(),
                           settings=SpecSettings(tree_bs=6, tree_w=4, draft_steps=2))
    assert len(got.margins) == len(got.tokens) == len(got.runner_ups) == MAX_NEW
    margins, runner_ups = full_margins(target, p, got.tokens)
    assert got.margins == pytest.approx(margins, abs=1e-4)  # fp32 logits
    assert got.runner_ups == runner_ups
    assert min(got.margins) >= 0


def test_the_root_must_be_the_targets_bonus(pair):
    target, _ = pair
    verifier = Verifier(target, 4)
    first = verifier.prefill(prompt())
    with pytest.raises(RuntimeError, match="not the target's last token"):
        verifier.verify([first + 1, 3], [-1, 0])
    emitted, _ = verifier.verify([first, 3], [-1, 0])  # the bonus as root: fine
    replayed = Verifier(target, 4)
    replayed.prefill(prompt(), Replay(ReplayProfile(emitted=(1,)), seed=0))
    replayed.verify([first + 1, 3], [-1, 0])  # under replay the draft may pick the root


def test_one_d_rule_measured_once_per_pair(pair, monkeypatch):
    warm = DecodeResult(tokens=[], target_s=[0.9, 1.0, 50.0], draft_parallel_s=[0.25, 0.3, 0.2], draft_steps=1)
    assert measure_draft_steps(warm) == 4  # median 1.0 / median 0.25
    warm.draft_steps, warm.draft_parallel_s = 2, [1.0, 1.2, 0.8]
    assert measure_draft_steps(warm) == 2  # per step: 0.5 / 2
    target, draft = engine(target_state()), pair[1]
    calls = []
    real_decode = swiftspec.decode

    def counting(*args, **kwargs):
        calls.append(kwargs["settings"].draft_steps)
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(swiftspec, "decode", counting)
    settings = SpecSettings(tree_bs=6, tree_w=4)
    rows = [counting(target, draft, prompt(seed=s), max_new_tokens=8, eos_ids=set(), settings=settings)
            for s in (1, 2)]
    assert calls == [None, 1, None]  # the warm-up (d = 1) runs once, inside the first request
    assert rows[0].draft_steps == rows[1].draft_steps >= 1
    assert len(rows[0].draft_parallel_s) == rows[0].rounds


def test_same_preset_and_seed_give_the_targets_weights_and_noise_is_seeded():
    t, d = (load_model("tiny-llama", weights="random", seed=0) for _ in range(2))
    assert noise.same_weights(t.hf, d.hf)
    assert not noise.same_weights(t.hf, load_model("tiny-llama", weights="random", seed=1).hf)
    noise.draft_from_target(t, d, 0.1, seed=0)
    again = load_model("tiny-llama", weights="random", seed=0)
    noise.perturb(again.hf, 0.1, seed=0)
    assert noise.same_weights(d.hf, again.hf) and not noise.same_weights(t.hf, d.hf)
    w, w0 = d.hf.model.layers[0].mlp.down_proj.weight, t.hf.model.layers[0].mlp.down_proj.weight
    assert ((w - w0).pow(2).mean().sqrt() / w0.pow(2).mean().sqrt()).item() == pytest.approx(0.1, rel=0.1)
    with pytest.raises(UserError, match="target's shape"):
        noise.check_draft_noise(0.1, "random", "llama-3-8b", "llama-3.2-1b")
    with pytest.raises(UserError, match="--weights random"):
        noise.check_draft_noise(0.1, "real", "llama-3.2-1b", "llama-3.2-1b")
    noise.check_draft_noise(0.1, "random", "llama-3.2-1b", "llama-3.2-1b")


@pytest.mark.parametrize("extra,message", [(["--draft-noise", "-1"], "at least 0"),
                                           (["--draft-noise", "0.1", "--target", "llama-3.2-1b", "--draft",
                                             "llama-3-8b", "--weights", "random"], "target's shape")])
def test_cli_draft_noise_errors(tmp_path, extra, message):
    args = ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--systems", "ar,tree", "--datasets", "gsm8k",
            "--limit", "1", "--max-new-tokens", "4", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")]
    (tmp_path / "gsm8k.jsonl").write_text('{"question_id": 1, "category": "math", "turns": ["What is 2+2?"]}\n')
    res = CliRunner().invoke(app, args + extra)
    assert res.exit_code == 2 and message in res.stderr and "loading" not in res.stdout, (res.stdout, res.stderr)


def test_peers_record_tokens_and_the_same_margins():
    from swiftspec_bench import hf_systems
    from swiftspec_bench.results import row_from_result
    from swiftspec_bench.systems import SYSTEMS, LoadedPair

    target, draft = (load_model("tiny-llama", weights="random", seed=s) for s in (0, 1))
    pair = LoadedPair(target, draft, dtype=torch.float32, device="cpu", max_seq_len=256)
    ours, _ = pair.models_for(SYSTEMS["ar"])
    p = prompt(8)
    ref = DECODERS["ar"](ours, None, p, max_new_tokens=12, eos_ids=set())
    for peer in (hf_systems.hf_ar, hf_systems.hf_assisted):
        got = peer(target, draft, p, max_new_tokens=12, eos_ids=set())
        assert got.tokens == ref.tokens and got.margins == pytest.approx(ref.margins, abs=1e-4)
    row = row_from_result(got, 1.0, output_text="")
    assert row["output_tokens"] == ref.tokens and len(row["margins"]) == 12
