"""Grafting under replayed acceptance (issue 9): rows record the grafts, replay profiles pool them,
and a replayed random-weight run grafts at the recorded rate and keeps the recorded lengths, so its
rounds accept what the real grafted run accepted instead of being cut at the tree's depth."""
from __future__ import annotations

import pytest

from engine_fixtures import engine, target_state
from swiftspec_bench.results import COLUMNS, ResultsTable, read_rows, row_from_result
from swiftspec_core.decoders import DECODERS, SpecSettings

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

