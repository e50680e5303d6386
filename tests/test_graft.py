"""Chain grafting (issue 9): lossless for every tree decoder, grafted nodes equal what expansion
creates, the draft tree's invariants and its evolving cache hold, split = lockstep, the CLI setting."""
from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from engine_fixtures import engine, perturbed, prompt, target_state
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.decoders.base import drafter_args, reuse
from swiftspec_core.decoders.drafter import Drafter
from swiftspec_core.decoders.verifier import Verifier
from swiftspec_core.ngram import NgramIndex
from swiftspec_core import graphs
from test_tree_cache import fresh_kv

MAX_NEW = 40
GRAFT = dict(graft="ngram", graft_len=6, graft_ngram=(3, 2))
REPEATS = [5, 6, 7, 8, 9, 10] * 4  # a prompt that repeats itself
DISTINCT = list(range(100, 124))  # one that never does (random weights may still loop in the output)


def test_ngram_index_answers_the_latest_earlier_occurrence():
    index = NgramIndex((3, 2))
    index.extend([1, 2, 3, 4, 1, 2, 3, 5, 6])
    assert index.continuation([1, 2, 3], 4) == [5, 6]  # the latest occurrence, up to the text's end
    assert index.continuation([9, 9, 4, 1], 2) == [2, 3]  # no 3-gram (9, 4, 1): the 2-gram (4, 1)
    assert index.continuation([7, 7, 7], 3) == []
    assert index.continuation([5, 6], 3) == []  # the text's own end has no follower yet
    index.extend([1, 2])
    assert index.continuation([5, 6], 3) == [1, 2]
    with pytest.raises(ValueError):
        NgramIndex(())


@pytest.fixture(scope="module")
def models():
    base = target_state()
    confident = target_state(confidence=1000.0)
    return {"target": engine(base), "same": engine(base), "perturbed": engine(perturbed(base, 0.3)),
            "unrelated": engine(target_state(seed=7)), "confident": engine(confident),
            "confident-perturbed": engine(perturbed(confident, 0.1))}


def grafter(draft, settings: SpecSettings):
    """The drafter a tree decoder used last on `draft` (sides are kept per model and settings)."""
    return reuse(draft, Drafter, *drafter_args(settings, settings.tree_w, graft=True)).grafter


@pytest.mark.parametrize("draft", ["same", "perturbed", "unrelated"])
@pytest.mark.parametrize("system,settings", [("tree", SpecSettings(**GRAFT)),
                                             ("swiftspec", SpecSettings(draft_steps=1, **GRAFT)),
                                             ("swiftspec", SpecSettings(draft_steps=3, tree_bs=6, tree_w=4, **GRAFT))])
def test_lossless_with_grafting(models, system, settings, draft):
    for p in (REPEATS, DISTINCT):
        ref = DECODERS["ar"](models["target"], None, p, max_new_tokens=MAX_NEW, eos_ids=set())
        got = DECODERS[system](models["target"], models[draft], p, max_new_tokens=MAX_NEW, eos_ids=set(),
                               settings=settings)
        assert got.tokens == ref.tokens, (system, p)
        assert sum(got.accepted) == MAX_NEW - 1
        g = grafter(models[draft], settings)
        assert g.steps > 0 and g.kept <= g.proposed
        if p is REPEATS:
            assert g.fired > 0  # the prompt's own repeats were looked up and grafted
            if draft == "same":
                assert g.kept > 0  # draft = target: what it repeats, it also predicts


def test_grafting_deepens_the_parallel_tree(models):
    """A confident pair on a repeating prompt: the chains let a round accept past d + 1."""
    m, d = models["confident"], models["confident-perturbed"]
    ref = DECODERS["ar"](m, None, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set())
    plain = DECODERS["swiftspec"](m, d, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(),
                                  settings=SpecSettings(draft_steps=1))
    grafted = DECODERS["swiftspec"](m, d, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(),
                                    settings=SpecSettings(draft_steps=1, **GRAFT))
    assert plain.tokens == grafted.tokens == ref.tokens
    assert max(plain.accepted) <= 2 < max(grafted.accepted)
    assert grafted.mean_accepted > plain.mean_accepted


def check_tree(tree) -> None:
    """Parents before children, scores never rise along a path, every parent expanded, the
    expanded nodes own the rows [0, n_rows) once each, the best subtrees ancestor-closed."""
    for node in range(1, len(tree)):
        parent = tree.parent[node]
        assert 0 <= parent < node and tree.score[node] <= tree.score[parent]
        assert tree.expanded(parent) and tree.children[parent][tree.token[node]] == node
    assert sorted(r for r in tree.row if r >= 0) == list(range(tree.n_rows))
    for bs in (4, 8, 16):
        nodes = set(tree.best_subtree(bs))
        assert all(tree.parent[n] in nodes for n in nodes if n)


def path_logprobs(model, tokens: list[int]) -> torch.Tensor:
    """The draft's next-token log-probs after `tokens`, from a fresh prefill."""
    return torch.log_softmax(model.prefill(tokens, model.new_cache(len(tokens) + 1)).double(), -1)


@pytest.mark.parametrize("draft_name", ["same", "perturbed"])
def test_grafted_nodes_are_what_expansion_creates_and_caches_stay_fresh(models, draft_name):
    """Every kept chain node is a top-k child of its parent with the parent's score plus its
    log-prob, and its own children are its top-k; every tree row (grafted or not) holds its
    path's KV, the prefix equals a fresh prefill after every re-root, no cut row is ever a tree row."""
    target, draft = models["target"], models[draft_name]
    w = 4
    verifier, drafter = Verifier(target, 8), Drafter(draft, w, 128, graft_len=6, graft_ngram=(3, 2))
    verified = REPEATS + [verifier.prefill(REPEATS)]
    drafter.prefill(REPEATS)
    drafter.first(verified[-1])
    rng, checked, longest = random.Random(0), 0, 0
    for _ in range(10):
        for _ in range(1 + rng.randrange(3)):
            before, kept_before = len(drafter.tree), drafter.grafter.kept
            drafter.step(w, w)
            tree = drafter.tree
            check_tree(tree)
            grafted = [n for n in range(before, len(tree)) if tree.expanded(n)]
            assert len(grafted) == drafter.grafter.kept - kept_before  # the step's kept chain
            longest = max(longest, len(grafted))
            for node in grafted:
                path = verified + [tree.token[a] for a in tree.ancestors(node)[1:]]
                lp = path_logprobs(draft, path)
                assert tree.token[node] in lp.topk(w).indices.tolist()
                assert tree.score[node] - tree.score[tree.parent[node]] == pytest.approx(lp[tree.token[node]].item(),
                                                                                          abs=1e-5)
                children = sorted(tree.children[node], key=lambda t: -tree.score[tree.children[node][t]])
                assert children == path_logprobs(draft, path + [tree.token[node]]).topk(w).indices.tolist()
                checked += 1
        tokens, parents = drafter.subtree(8)
        emitted, _ = verifier.verify(tokens, parents)
        emitted, _ = drafter.advance(emitted)
        verified += emitted
        n, tree = drafter.cache.length, drafter.tree
        k, v = fresh_kv(draft, verified[:n])
        torch.testing.assert_close(drafter.cache.k[:, :n], k)
        torch.testing.assert_close(drafter.cache.v[:, :n], v)
        for node in range(len(tree)):
            if tree.expanded(node):
                path = verified if node == 0 else verified + [tree.token[a] for a in tree.ancestors(node)[1:]] + [
                    tree.token[node]]
                k, _ = fresh_kv(draft, path)
                torch.testing.assert_close(drafter.cache.k[:, n + tree.row[node]], k[:, -1])
        check_tree(tree)
    assert checked > 0
    if draft_name == "same":
        assert longest >= 2  # a chain of several nodes, each attending to the ones before
    else:
        assert drafter.grafter.proposed > drafter.grafter.kept  # and chains that were cut


class WidthRecorder(graphs.PaddedForward):
    widest = 0

    def __call__(self, tokens, *args):
        WidthRecorder.widest = max(WidthRecorder.widest, len(tokens))
        return super().__call__(tokens, *args)


def test_padded_forward_takes_the_grafted_step(models, monkeypatch):
    """The fixed-width (CUDA-graph shaped) draft forward holds the leaves plus a chain, and gives
    what the exact forward gives."""
    target, draft = models["target"], models["same"]
    settings = SpecSettings(draft_steps=2, tree_w=4, **GRAFT)
    exact = {s: DECODERS[s](target, draft, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(), settings=settings)
             for s in ("tree", "swiftspec")}
    import swiftspec_core.decoders.drafter as drafter_mod

    monkeypatch.setattr(drafter_mod, "make_forward",
                        lambda m, c, w, max_visible: WidthRecorder(m, c, w, max_visible, graph=False))
    for m in (target, draft):
        m.__dict__.pop("_sides", None)
    try:
        for system, ref in exact.items():
            got = DECODERS[system](target, draft, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(), settings=settings)
            assert got.tokens == ref.tokens and got.accepted == ref.accepted, system
        assert WidthRecorder.widest > settings.tree_w + 1  # a chain rode along
    finally:
        for m in (target, draft):
            m.__dict__.pop("_sides", None)  # leave exact sides for the other tests


def test_split_equals_lockstep_with_grafting():
    from swiftspec_core.models.loading import load_engine
    from swiftspec_core.replay import Replay, ReplayProfile
    from swiftspec_core.runtime.service import WorkerPlan, WorkerPool

    settings = SpecSettings(tree_bs=6, tree_w=4, draft_steps=2, **GRAFT)
    profile = ReplayProfile(emitted=(2, 4, 6), bonus_in_tree=(True, False), topk_logprobs=(-0.1, -2.5, -3.0, -4.0))
    load = lambda seed: load_engine("tiny-llama", weights="random", dtype=torch.float64, seed=seed,  # noqa: E731
                                    max_seq_len=512)
    target, draft = load(0), load(0)
    plan = WorkerPlan(system="swiftspec", target="tiny-llama", draft="tiny-llama", weights="random", dtype="float64",
                      seed=0, max_seq_len=512, settings=settings)
    pool = WorkerPool(plan, world_size=2, device="cpu", split=(1, 1))
    try:
        for p, replay in ((REPEATS, None), (DISTINCT, None), (REPEATS, 3)):
            ref = DECODERS["swiftspec"](target, draft, p, max_new_tokens=MAX_NEW, eos_ids=set(), settings=settings,
                                        replay=Replay(profile, seed=replay) if replay is not None else None)
            if p is REPEATS and replay is None:
                assert grafter(draft, settings).kept > 0
            got, _ = pool.decode(p, max_new_tokens=MAX_NEW, eos_ids=set(),
                                 **({"replay": profile, "replay_seed": replay} if replay is not None else {}))
            assert got.tokens == ref.tokens and got.accepted == ref.accepted
    finally:
        pool.close()


DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "eagle"


@pytest.mark.skipif(not (DATA_DIR / "gsm8k.jsonl").exists(), reason=f"no datasets at {DATA_DIR}")
def test_cli_graft_setting_labels_and_rows(tmp_path):
    from swiftspec_bench.cli import app

    def run(*extra):
        return CliRunner().invoke(app, ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--datasets",
                                        "gsm8k", "--limit", "1", "--max-new-tokens", "12", "--data-dir",
                                        str(DATA_DIR), "--out", str(tmp_path / "run"), *extra])

    for extra in (["--graft", "off"], ["--graft-len", "4", "--graft-ngram", "2,3"]):  # grafting is the default
        res = run("--systems", "ar,tree,swiftspec", "--draft-steps", "2", *extra)
        assert res.exit_code == 0, (res.stdout, res.exception)
    frame = pd.read_parquet(tmp_path / "run" / "results.parquet")
    graft = dict(zip(frame.system, frame.graft))
    assert graft == {"ar": "off", "tree": "off", "swiftspec:d2": "off", "tree:graft": "ngram",
                     "swiftspec:d2:graft": "ngram"}
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "run")])
    assert res.exit_code == 0 and "lossless: yes" in res.stdout
    for extra, message in ((["--graft", "suffix"], "--graft suffix"), (["--graft-len", "0"], "--graft-len"),
                           (["--graft-ngram", "3,x"], "--graft-ngram")):
        res = run("--systems", "tree", *extra)
        assert res.exit_code == 2 and message in res.stderr, extra


def test_a_draft_deeper_than_the_engine_waits():
    """A draft that deepens faster than rounds accept (grafts, or d = 8) reaches positions past the
    rope tables near a request's end (it raised IndexError): those leaves wait, the run stays lossless."""
    from engine_fixtures import tiny_args
    from swiftspec_core.models.weights import build_engine

    p = prompt(12, seed=3)
    m = build_engine(tiny_args(), target_state(confidence=1000.0), dtype=torch.float64, max_seq_len=len(p) + 70)
    ref = DECODERS["ar"](m, None, p, max_new_tokens=60, eos_ids=set())
    for settings in (SpecSettings(draft_steps=3, **GRAFT), SpecSettings(draft_steps=8)):
        got = DECODERS["swiftspec"](m, m, p, max_new_tokens=60, eos_ids=set(), settings=settings)
        assert got.tokens == ref.tokens


def test_replay_draws_from_recordings_with_the_same_grafting(tmp_path):
    from swiftspec_bench.replay_source import ReplaySource
    from swiftspec_bench.results import COLUMNS, ResultsTable

    table = ResultsTable(tmp_path)
    for i, (system, graft, accepted) in enumerate([("tree", "off", [2]), ("tree:graft", "ngram", [7]),
                                                   ("chain", "off", [3])]):
        row = dict.fromkeys(COLUMNS) | dict(system=system, target="t", draft="d", dataset="gsm8k", question_id=str(i),
                                            turn=1, acceptance="real", tree_bs=8, tree_w=8, chain_k=7, graft=graft,
                                            accepted_lengths=accepted, bonus_in_tree=[], draft_topk_logprobs=[])
        table.append(row)
    plain = ReplaySource(tmp_path, tree_bs=8, tree_w=8, chain_k=7)
    grafted = ReplaySource(tmp_path, tree_bs=8, tree_w=8, chain_k=7, graft="ngram")
    assert plain.profile("tree", "gsm8k").emitted == (2,) and grafted.profile("tree", "gsm8k").emitted == (7,)
    assert grafted.profile("chain", "gsm8k").emitted == (3,)  # chain does not graft: its rows serve both
    from_csv = ReplaySource(tmp_path / "results.csv", tree_bs=8, tree_w=8, chain_k=7, graft="ngram")
    for system in ("tree", "chain"):  # the csv (results.read_csv) replays as the parquet does
        assert from_csv.profile(system, "gsm8k") == grafted.profile(system, "gsm8k")
