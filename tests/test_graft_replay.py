"""Grafting under replayed acceptance (issue 9): rows record the grafts, replay profiles pool them,
and a replayed random-weight run grafts at the recorded rate and keeps the recorded lengths, so its
rounds accept what the real grafted run accepted instead of being cut at the tree's depth."""
from __future__ import annotations

import pytest
import torch

from engine_fixtures import engine, target_state
from swiftspec_bench.replay_source import ReplaySource
from swiftspec_bench.results import COLUMNS, ResultsTable, read_rows, row_from_result
from swiftspec_core.decoders import DECODERS, SpecSettings
from swiftspec_core.decoders.drafter import Drafter
from swiftspec_core.replay import Replay, ReplayProfile, best_path
from test_graft import check_tree

MAX_NEW = 40
GRAFT = dict(graft="ngram", graft_len=6, graft_ngram=(3, 2))
REPEATS = [5, 6, 7, 8, 9, 10] * 4  # a prompt that repeats itself


@pytest.fixture(scope="module")
def pair():
    confident = target_state(confidence=1000.0)
    return engine(confident), engine(confident)


def row(result, system: str, qid: str = "0", graft: str = "ngram") -> dict:
    return row_from_result(result, 1.0, output_text="", system=system, target="t", draft="d", dataset="gsm8k",
                           question_id=qid, turn=1, acceptance="real", tree_bs=8, tree_w=8, chain_k=7, graft=graft)


@pytest.mark.parametrize("system,settings", [("tree", SpecSettings(**GRAFT)),
                                             ("swiftspec", SpecSettings(draft_steps=2, **GRAFT))])
def test_rows_record_the_grafts(pair, tmp_path, system, settings):
    target, draft = pair
    got = DECODERS[system](target, draft, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(), settings=settings)
    assert got.graft_steps and got.graft_steps >= len(got.graft_kept) > 0
    assert all(0 <= k <= settings.graft_len for k in got.graft_kept) and max(got.graft_kept) > 0
    plain = DECODERS[system](target, draft, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(),
                             settings=SpecSettings(draft_steps=2))
    assert plain.graft_steps is None and plain.graft_kept == []
    table = ResultsTable(tmp_path)
    for r in (row(got, system), row(plain, system, qid="1", graft="off")):
        table.append(dict.fromkeys(COLUMNS) | r)
    back = read_rows(tmp_path)
    assert back[0]["graft_steps"] == got.graft_steps and back[0]["graft_kept"] == got.graft_kept
    assert back[1]["graft_steps"] is None and back[1]["graft_kept"] == []



def test_a_replay_profile_pools_the_grafts(tmp_path):
    table = ResultsTable(tmp_path)
    recorded = [("tree:graft", "ngram", 10, [3, 0]), ("tree:graft", "ngram", 6, [5]), ("tree:graft", "ngram", None, []),
                ("tree", "off", None, [])]
    for i, (system, graft, steps, kept) in enumerate(recorded):
        table.append(dict.fromkeys(COLUMNS) | dict(system=system, target="t", draft="d", dataset="gsm8k",
                                                   question_id=str(i), turn=1, acceptance="real", tree_bs=8, tree_w=8,
                                                   chain_k=7, graft=graft, accepted_lengths=[4], bonus_in_tree=[],
                                                   draft_topk_logprobs=[], graft_steps=steps, graft_kept=kept))
    grafted = ReplaySource(tmp_path, tree_bs=8, tree_w=8, chain_k=7, graft="ngram").profile("tree", "gsm8k")
    assert grafted.graft_fire == pytest.approx(3 / 16) and sorted(grafted.graft_kept) == [0, 3, 5]
    assert ReplaySource(tmp_path / "results.csv", tree_bs=8, tree_w=8, chain_k=7, graft="ngram").profile(
        "tree", "gsm8k") == grafted
    plain = ReplaySource(tmp_path, tree_bs=8, tree_w=8, chain_k=7).profile("tree", "gsm8k")
    assert plain.graft_fire is None and plain.graft_kept == ()  # a replay that does not graft draws none


def replayed_profile(fire: float = 0.5, kept: tuple[int, ...] = (4, 5, 6)) -> ReplayProfile:
    """Every recorded round emitted 6 tokens at d = 2: only grafts deepen the tree that far."""
    return ReplayProfile(emitted=(6,), bonus_in_tree=(True, False), topk_logprobs=(-0.1, -2.5, -3.0, -4.0),
                         graft_fire=fire, graft_kept=kept)


def test_a_replayed_graft_keeps_the_drawn_nodes_along_the_best_children():
    draft = engine(target_state(seed=3))
    drafter = Drafter(draft, 4, 128, graft_len=6, graft_ngram=(3, 2))
    drafter.prefill(list(range(100, 124)), Replay(replayed_profile(fire=1.0, kept=(3,)), seed=0))
    drafter.first(7)
    drafter.step(4, 4)
    tree, node, path = drafter.tree, 0, []
    while tree.children[node] and tree.expanded(node):
        node = min(tree.children[node].values())
        path.append(node)
    assert [tree.expanded(n) for n in path] == [True, True, True, False]  # the chain: 3 nodes kept
    assert tree.n_rows == 4 and drafter.grafter.kept_lengths == [3] and drafter.grafter.proposed == 6
    check_tree(tree)


def replayed_run(system: str, graft: bool, seed: int = 5, profile: ReplayProfile | None = None):
    target, draft = engine(target_state(seed=0)), engine(target_state(seed=3))  # random, unrelated weights
    settings = SpecSettings(tree_bs=8, tree_w=4, draft_steps=2, **(GRAFT if graft else {}))
    return DECODERS[system](target, draft, list(range(100, 124)), max_new_tokens=REPLAYED_NEW, eos_ids=set(),
                            settings=settings, replay=Replay(profile or replayed_profile(), seed=seed))


REPLAYED_NEW = 100


def test_a_replayed_run_grafts_at_the_recorded_rate_and_accepts_the_recorded_lengths():
    grafted, plain = replayed_run("swiftspec", True), replayed_run("swiftspec", False)
    rate = len(grafted.graft_kept) / grafted.graft_steps
    assert grafted.graft_steps > 30 and rate == pytest.approx(0.5, abs=0.15)
    assert set(grafted.graft_kept) == {4, 5, 6}  # the drawn lengths, kept whole where the tree had room
    # d + 1 = 3 without grafts (the tree deepens a level a step); near the recorded 6 with them
    assert plain.mean_accepted <= 3.5 < 4.8 <= grafted.mean_accepted
    again = replayed_run("swiftspec", True)
    assert (again.accepted, again.graft_kept, again.tokens) == (grafted.accepted, grafted.graft_kept, grafted.tokens)
    tree = replayed_run("tree", True)  # serial tree replays its grafts the same way
    assert tree.graft_kept and len(tree.graft_kept) / tree.graft_steps == pytest.approx(0.5, abs=0.15)


def test_split_replays_the_grafts_as_lockstep_does():
    """The draft worker builds its Drafter through drafter_args and gets its own Replay: its graft
    draws (a stream of their own) are lockstep's, so the accepted lengths and tokens match."""
    from swiftspec_core.models.loading import load_engine
    from swiftspec_core.runtime.service import WorkerPlan, WorkerPool

    settings = SpecSettings(tree_bs=8, tree_w=4, draft_steps=2, **GRAFT)
    load = lambda: load_engine("tiny-llama", weights="random", dtype=torch.float64, seed=0,  # noqa: E731
                               max_seq_len=512)
    profile = replayed_profile()
    ref = DECODERS["swiftspec"](load(), load(), REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(), settings=settings,
                                replay=Replay(profile, seed=3))
    assert ref.graft_kept and ref.mean_accepted > 4
    plan = WorkerPlan(system="swiftspec", target="tiny-llama", draft="tiny-llama", weights="random", dtype="float64",
                      seed=0, max_seq_len=512, settings=settings)
    pool = WorkerPool(plan, world_size=2, device="cpu", split=(1, 1))
    try:
        got, _ = pool.decode(REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(), replay=profile, replay_seed=3)
        assert got.accepted == ref.accepted
        # The last bonus is the target's in a split run: no next tree carries the draft's pick
        # (Drafter.advance under replay) back to it, as every earlier round's does.
        assert got.tokens[:-1] == ref.tokens[:-1]
    finally:
        pool.close()


# --- acceptance a node along the best path, at recorded rates -----------------------------------------

@pytest.mark.parametrize("system,settings", [("tree", SpecSettings(**GRAFT)),
                                             ("swiftspec", SpecSettings(draft_steps=2, **GRAFT))])
def test_rows_record_each_sent_best_path_and_a_profile_takes_rates_from_them(pair, tmp_path, system, settings):
    """A lockstep row records every sent tree's best path; a real verification never emits past it
    (the confident pair here accepts along it). The profile's rate at position k is the rounds
    that accepted node k over those whose path had it."""
    target, draft = pair
    got = DECODERS[system](target, draft, REPEATS, max_new_tokens=MAX_NEW, eos_ids=set(), settings=settings)
    assert len(got.sent_paths) == got.rounds and all(e <= p for e, p in zip(got.accepted, got.sent_paths))
    table = ResultsTable(tmp_path)
    table.append(dict.fromkeys(COLUMNS) | row(got, f"{system}:d2:graft" if system == "swiftspec" else "tree:graft"))
    profile = ReplaySource(tmp_path, tree_bs=8, tree_w=8, chain_k=7, graft="ngram").profile(system, "gsm8k", 2)
    k = 1
    had = sum(p > k for p in got.sent_paths)
    took = sum(p > k and e > k for p, e in zip(got.sent_paths, got.accepted))
    assert profile.accept_rates[0] == pytest.approx(took / had)
    assert ReplaySource(tmp_path / "results.csv", tree_bs=8, tree_w=8, chain_k=7, graft="ngram").profile(
        system, "gsm8k", 2) == profile


def test_rates_come_from_the_rows_that_recorded_paths_in_a_mixed_frame():
    """A union of folders (replay_union.py) holds older rows too: NaN where they lack sent_paths."""
    import pandas as pd
    from swiftspec_bench.replay_source import _accept_rates

    rows = pd.DataFrame({"sent_paths": [[3, 2], float("nan"), None],
                         "accepted_lengths": [[3, 1], [4, 4], [2]]})
    assert _accept_rates(rows) == (0.5, 1.0)  # node 1: 1 of 2 paths took it; node 2: the one path that had it


def test_replay_at_rates_accepts_node_by_node_along_the_best_path():
    parents = [-1, 0, 1, 2, 0, 3]  # best path 0, 1, 2, 3, 5
    assert best_path(parents) == [0, 1, 2, 3, 5]
    sure = Replay(ReplayProfile(emitted=(1,), accept_rates=(1.0,)), seed=0)
    assert all(sure.accept(parents) == [0, 1, 2, 3, 5] for _ in range(5))  # the whole path, whatever was drawn
    never = Replay(ReplayProfile(emitted=(5,), accept_rates=(0.0,)), seed=0)
    assert all(never.accept(parents) == [0] for _ in range(5))
    half = Replay(ReplayProfile(emitted=(1,), accept_rates=(1.0, 0.5)), seed=1)
    lengths = [len(half.accept(parents)) for _ in range(400)]
    assert min(lengths) == 2 and max(lengths) == 5  # node 1 always, then each further node half the time
    assert sum(n == 2 for n in lengths) / 400 == pytest.approx(0.5, abs=0.08)
    drawn = Replay(ReplayProfile(emitted=(3,)), seed=0)  # no rates: a drawn length, as before
    assert drawn.accept(parents) == [0, 1, 2]
