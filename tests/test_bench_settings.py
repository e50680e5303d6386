"""Run settings only some systems use (run_settings.SETTING_USERS): rows of the others stand beside rows
of another value, in a resumed folder and in `compare` / `plot` of several folders (an ar baseline
run once, a folder a tree setting); the table holds to what the systems do."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
from typer.testing import CliRunner

from engine_fixtures import engine, perturbed, prompt, target_state
from swiftspec_bench import results, run_settings
from swiftspec_bench.cli import DEFAULT_TREE_BS, app
from swiftspec_core.errors import UserError
from test_bench_compare import folder_of
from test_bench_errors import assert_user_error
from test_bench_run import run_args
from test_bench_units import make_row


def test_the_table_names_the_systems_that_use_each_setting():
    from swiftspec_bench.systems import SYSTEMS
    from swiftspec_core.decoders import DECODERS, GRAFTING, SpecSettings
    from swiftspec_core.decoders.base import verification_width

    assert set(run_settings.SETTING_USERS) <= set(run_settings.RUN_SETTINGS)
    assert set(run_settings.DRAFTING) == {name for name, s in SYSTEMS.items() if s.needs_draft}
    assert set(run_settings.TREES) == GRAFTING
    for name, value, other in (("tree_bs", 4, 8), ("chain_k", 3, 7)):
        widths = {s for s in DECODERS if verification_width(s, SpecSettings(**{name: value}))
                  != verification_width(s, SpecSettings(**{name: other}))}
        assert widths == set(run_settings.SETTING_USERS[name]) & set(DECODERS), name


@pytest.fixture(scope="module")
def pair():
    base = target_state()
    return engine(base), engine(perturbed(base, 0.3))


@pytest.mark.parametrize("name, value", [("tree_bs", 4), ("tree_w", 2), ("chain_k", 3), ("graft_len", 3),
                                         ("graft_ngram", (2,))])
def test_a_system_that_does_not_use_a_setting_decodes_the_same_under_another_value(pair, name, value):
    """What makes the table safe: a row of such a system is the same row at any value."""
    from swiftspec_core.decoders import DECODERS, SpecSettings

    target, draft = pair
    base = SpecSettings(graft="ngram")  # grafting on: its length and n-gram sizes then count
    for system in DECODERS:
        if system in run_settings.SETTING_USERS[name]:
            continue
        runs = [DECODERS[system](target, draft, prompt(), max_new_tokens=24, eos_ids=set(), settings=s)
                for s in (base, replace(base, **{name: value}))]
        assert runs[0].tokens == runs[1].tokens and runs[0].accepted == runs[1].accepted, (system, name)


def test_a_resume_holds_each_setting_where_both_sides_use_it(tmp_path):
    ar = results.ResultsTable(folder_of(tmp_path / "ar", make_row("ar", tree_bs=8, chain_k=7)))
    ar.check_settings({"tree_bs": 16, "chain_k": 3}, ["ar", "tree", "chain"])  # ar's rows use neither
    tree = results.ResultsTable(folder_of(tmp_path / "tree", make_row("tree", tree_bs=8)))
    tree.check_settings({"tree_bs": 16}, ["ar", "chain"])  # this run's systems do not use it
    for systems in (["swiftspec"], ["ar", "tree"], None):
        with pytest.raises(UserError, match="tree_bs=8"):
            tree.check_settings({"tree_bs": 16}, systems)
    with pytest.raises(UserError, match="max_new_tokens=8"):  # every system uses it
        ar.check_settings({"max_new_tokens": 16}, ["tree"])


def test_compare_takes_a_baseline_and_a_sweep_from_their_own_folders(tmp_path):
    base = folder_of(tmp_path / "ar", make_row("ar", "0", tps=10, tree_bs=8), make_row("ar", "1", tps=10, tree_bs=8))
    sweep = folder_of(tmp_path / "bs16", make_row("tree", "0", tps=30, tree_bs=16),
                      make_row("tree", "1", tps=20, tree_bs=16))
    res = CliRunner().invoke(app, ["compare", str(base), str(sweep), "--format", "csv"])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    summary = pd.read_csv(pd.io.common.StringIO(res.stdout)).set_index(["dataset", "system"])
    assert summary.loc[("overall", "tree"), "speedup"] == pytest.approx(2.5)
    assert "lossless: yes" in res.stderr
    res = CliRunner().invoke(app, ["plot", str(base), str(sweep), "--out", str(tmp_path / "figures")])
    assert res.exit_code == 0 and (tmp_path / "figures" / "accepted_length.png").exists(), res.stdout
    # a folder named twice is read once
    assert CliRunner().invoke(app, ["compare", str(base), str(tmp_path / "ar" / ".." / "ar")]).exit_code == 0


def test_folders_that_cannot_stand_together_are_refused(tmp_path):
    base = folder_of(tmp_path / "ar", make_row("ar", tree_bs=8))
    again = folder_of(tmp_path / "again", make_row("ar", tree_bs=16))
    assert_user_error(["compare", str(base), str(again)],
                      contains=f"ar on gsm8k question 0 turn 1 (t / d) is in both {base} and {again}")
    other_text = folder_of(tmp_path / "edited", make_row("tree", prompt_sha="b" * 64))
    folder_of(tmp_path / "asked", make_row("ar", prompt_sha="a" * 64))
    assert_user_error(["compare", str(tmp_path / "asked"), str(other_text)], contains="asked in different texts")
    bs8, bs16 = (folder_of(tmp_path / f"{s}{b}", make_row(s, tree_bs=b)) for s, b in (("tree", 8), ("swiftspec", 16)))
    for command in (["compare"], ["plot", "--out", str(tmp_path / "f")]):
        assert_user_error(command + [str(base), str(bs8), str(bs16)], contains="different tree_bs (8, 16)")
    assert_user_error(["plot", str(base), str(bs8)], contains="name the figures' folder with --out")


def test_a_run_resumes_a_baseline_folder_with_a_tree_setting_of_its_own(tmp_path):
    """A run of the CLI: ar, then tree at --tree-bs 4 into the same folder (refused before: ar's rows
    held the default), then compare."""
    out = tmp_path / "run"
    res = CliRunner().invoke(app, run_args(out, "ar", "gsm8k"))
    assert res.exit_code == 0, res.stderr
    res = CliRunner().invoke(app, run_args(out, "ar,tree", "gsm8k") + ["--tree-bs", "4", "--tree-w", "2"])
    assert res.exit_code == 0, res.stderr
    rows = pd.read_parquet(out / "results.parquet").set_index("system")
    assert rows.tree_bs.to_dict() == {"ar": DEFAULT_TREE_BS, "tree:graft": 4}
    res = CliRunner().invoke(app, ["compare", str(out)])
    assert res.exit_code == 0 and "lossless: yes" in res.stdout, res.stdout
    res = CliRunner().invoke(app, run_args(out, "tree", "gsm8k"))  # tree's rows were made at 4
    assert res.exit_code == 2 and "tree_bs=4" in res.stderr, res.stderr


def test_a_setting_typed_for_systems_the_run_does_not_run_is_noted(tmp_path):
    res = CliRunner().invoke(app, run_args(tmp_path / "a", "ar", "gsm8k") + ["--tree-bs", "4", "--graft", "off",
                                                                          "--draft-noise", "0"])
    assert res.exit_code == 0, res.stderr
    notes = [line for line in res.stdout.splitlines() if line.startswith("note:")]
    assert notes == ["note: --tree-bs is for tree and swiftspec; --systems runs none of them, so it changes nothing",
                     "note: --graft is for tree and swiftspec; --systems runs none of them, so it changes nothing",
                     "note: --draft-noise is for chain, tree, swiftspec and hf-assisted; --systems runs none of them, "
                     "so it changes nothing"]
    res = CliRunner().invoke(app, run_args(tmp_path / "b", "ar,chain", "gsm8k") + ["--chain-k", "3"])
    assert res.exit_code == 0 and "note:" not in res.stdout, res.stdout  # typed for a system it runs
