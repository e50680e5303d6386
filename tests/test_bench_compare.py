"""compare's and plot's numbers say what they are, over folders as users leave them: a system that
ran fewer queries than the baseline, rows put together from runs of other settings, a system
alone on its queries, markdown and csv without the table's title, Fig. 9's reference lines, a
table of another tool, a file where a folder was named."""
from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from swiftspec_bench import compare, lossless, plot, results
from swiftspec_bench.cli import app
from test_bench_errors import assert_user_error
from test_bench_units import frame_of, make_row


def folder_of(path, *rows):
    table = results.ResultsTable(path)
    for row in rows:
        table.append(row)
    return path


def test_a_speedup_is_over_the_queries_both_systems_ran():
    # ar ran three questions (10, 20, 30 tok/s) and one of qa; tree only the first (40 tok/s): 4x ar
    # there, not 40 over ar's mean of 20 (2x), nor over ar's overall mean with qa's row (1.6x)
    frame = frame_of(make_row("ar", "0", tps=10), make_row("ar", "1", tps=20), make_row("ar", "2", tps=30),
                     make_row("ar", "9", tps=40, dataset="qa"), make_row("tree", "0", tps=40))
    s = compare.summarize(frame).set_index(["dataset", "system"])
    assert s.loc[("gsm8k", "tree"), "speedup"] == pytest.approx(4.0)
    assert s.loc[("overall", "tree"), "speedup"] == pytest.approx(4.0)
    assert s.loc[("gsm8k", "ar"), "mean_tok_s"] == pytest.approx(20)  # what each ran, as before
    assert s.loc[("overall", "tree"), "queries"] == 1
    lines = compare.speedup_lines(compare.summarize(frame))
    assert lines[0] == "speedup: mean tokens/s over ar's, on the queries both ran"
    assert lines[1].startswith("note: tree and ar ran different queries")
    # no query in common: no speedup, not one over other questions
    apart = compare.summarize(frame_of(make_row("ar", "0"), make_row("tree", "1"))).set_index("system")
    assert apart.loc["tree", "speedup"].isna().all()  # its dataset row and overall
    alike = frame_of(make_row("ar", "0", tps=10), make_row("tree", "0", tps=20))
    assert compare.speedup_lines(compare.summarize(alike)) == [
        "speedup: mean tokens/s over ar's, on the queries both ran"]


@pytest.mark.parametrize("fmt", ["markdown", "csv", "table"])
def test_every_format_names_the_baseline(tmp_path, fmt):
    # markdown and csv have no title: the speedup column's baseline was said nowhere
    folder = folder_of(tmp_path / "run", make_row("ar", tps=10), make_row("tree", tps=20))
    res = CliRunner().invoke(app, ["compare", str(folder), "--format", fmt, "--baseline", "tree"])
    assert res.exit_code == 0, res.stdout
    said = res.stderr if fmt == "csv" else res.stdout  # csv: stdout is the CSV alone
    assert "speedup: mean tokens/s over tree's, on the queries both ran" in said.splitlines()


def test_rows_of_other_settings_in_one_folder_are_refused(tmp_path):
    # A run never mixes them (it refuses to resume so); rows merged by hand read ar's 8 tokens
    # against tree's 4 as a real divergence (exit 1) and averaged 4- and 8-token speeds.
    merged = folder_of(tmp_path / "merged", make_row("ar", max_new_tokens=8),
                       make_row("tree", accepted=(2,), max_new_tokens=4))
    for command in ("compare", "plot"):
        assert_user_error([command, str(merged)], contains="were made with different max_new_tokens (8, 4)")
    # --graft off's rows (graft_len None) beside grafting ones, and two pairs of their own settings: one run's
    grafts = folder_of(tmp_path / "grafts", make_row("ar", graft_len=None), make_row("tree:graft", graft_len=6),
                       make_row("ar", target="t2", max_new_tokens=4))
    assert CliRunner().invoke(app, ["compare", str(grafts)]).exit_code == 0


def test_a_system_alone_on_its_queries_is_not_called_lossless(tmp_path):
    alone = frame_of(make_row("tree", "0"), make_row("tree", "1"))
    divergences, summary = lossless.check(alone)
    assert summary.set_index("system").loc["tree", "unchecked"] == 2
    passed, line = lossless.verdict(divergences, summary)
    assert line.startswith("lossless: not checked (no query was decoded by two systems")
    # ar beside it on one of the two: checked there, the other said
    some = frame_of(make_row("ar", "0"), make_row("tree", "0"), make_row("tree", "1"))
    passed, line = lossless.verdict(*lossless.check(some))
    assert passed and line == "lossless: yes (1 rows unchecked: no other system decoded their query)"
    folder = folder_of(tmp_path / "alone", *alone.to_dict("records"))
    res = CliRunner().invoke(app, ["compare", str(folder)])
    assert res.exit_code == 0 and "lossless: not checked" in res.stdout and "lossless: yes" not in res.stdout


def test_ar_rows_of_a_replayed_run_are_a_reference_and_drawn_rows_are_said(tmp_path):
    # ar decodes as ar under --acceptance replay (it draws nothing). Before: an ar baseline run with
    # replay beside a tree run of real acceptance was dropped from the check ("not checked: no
    # query was decoded by two systems ... run ar beside them"), and a real ar beside replayed
    # tree was called unchecked for that same reason, not for the replay.
    baseline = folder_of(tmp_path / "ar", make_row("ar", acceptance="replayed"))
    real_tree = folder_of(tmp_path / "tree", make_row("tree"))
    res = CliRunner().invoke(app, ["compare", str(baseline), str(real_tree)])
    assert res.exit_code == 0 and "lossless: yes" in res.stdout, res.stdout
    real_ar = folder_of(tmp_path / "real-ar", make_row("ar"))
    drawn_tree = folder_of(tmp_path / "drawn", make_row("tree", acceptance="replayed"))
    res = CliRunner().invoke(app, ["compare", str(real_ar), str(drawn_tree)])
    assert res.exit_code == 0 and "lossless: not checked (acceptance replayed" in res.stdout, res.stdout
    # a pair of real acceptance beside a pair replayed: the one checked, the other said
    drawn = frame_of(make_row("ar"), make_row("tree"), make_row("swiftspec", draft="d2", acceptance="replayed"))
    said = []
    assert lossless.report(drawn, str, said.append) is True
    assert said == ["lossless: yes; 1 rows of replayed acceptance not compared (their tokens follow the drawn lengths)"]


def test_the_reference_lines_of_fig_9_have_a_color_each(tmp_path, monkeypatch):
    # axhline without a color drew ar's and tree@tp2's lines alike (matplotlib's first color, the
    # swiftspec line's too): the legend could not tell them apart
    frame = pd.DataFrame([{"target": "t", "draft": "d", "dataset": "qa", "system": s, "tokens_per_s": v,
                           "device": "cuda", "weights": "random", "acceptance": "real"}
                          for s, v in (("swiftspec@1+1", 300.0), ("swiftspec@2+1", 280.0), ("ar", 100.0),
                                       ("tree@tp2", 250.0))])
    colors = []

    def save(fig, out, stem):
        colors.extend(line.get_color() for ax in fig.axes for line in ax.get_lines())
        plot.plt.close(fig)
        return []

    monkeypatch.setattr(plot, "_save", save)
    plot.speed_by_target_gpus(frame, tmp_path)
    assert len(colors) == 3 and len(set(colors)) == 3


def test_tables_that_are_not_ours_or_not_a_folder_end_in_one_line(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    row = make_row("ar")
    pd.DataFrame([{k: (str(v) if k in ("turn", "tokens_per_s") else v) for k, v in row.items()}]).to_parquet(
        other / "results.parquet")  # another tool's columns of the same names, as text
    for command in ("compare", "plot"):
        assert_user_error([command, str(other)], contains="the columns turn, tokens_per_s hold no numbers")
        assert_user_error([command, str(other / "results.parquet")], contains="a file, not a run folder")


def test_parquet_is_read_on_one_thread(tmp_path, monkeypatch):
    # Arrow's read pool, still winding down when plot or compare exits right after reading (their
    # errors), aborted the process at exit ("terminate called without an active exception",
    # status 134) in 12 of 40 runs on this machine; a subprocess loop would be slow and flaky.
    import pyarrow.parquet as pq

    folder = folder_of(tmp_path / "run", make_row("ar"))
    seen, read = [], pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: seen.append(k) or read(*a, **k))
    results.read_rows(folder)
    assert seen == [{"use_threads": False}]


def test_plot_refuses_an_empty_out(tmp_path, monkeypatch):
    # Path("") is the current folder: the figures landed there unasked
    folder = folder_of(tmp_path / "run", make_row("ar"))
    monkeypatch.chdir(tmp_path)
    assert_user_error(["plot", str(folder), "--out", ""], contains="--out is empty")
    assert not list(tmp_path.glob("*.png"))
