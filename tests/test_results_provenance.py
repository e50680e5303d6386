"""What rows say about the code and the run that made them: the `commit` column (dirty trees
marked), and compare's table (names never cut) with its line saying what the rows are."""
from __future__ import annotations

import subprocess

import pytest
from typer.testing import CliRunner

from swiftspec_bench import compare, datasets, results
from swiftspec_bench.cli import app
from test_bench_units import frame_of, make_row


def git(folder, *args) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_commit_says_dirty_where_tracked_files_changed(tmp_path, monkeypatch):
    monkeypatch.delenv("SWIFTSPEC_COMMIT", raising=False)
    monkeypatch.setattr(datasets, "PACKAGE_CHECKOUT", tmp_path)
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", "code.py")
    git(tmp_path, "commit", "-q", "-m", "one")
    head = git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "scratch.txt").write_text("untracked: not the code the rows ran")
    assert results.package_commit() == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.package_commit() == f"{head}-dirty"
    monkeypatch.setenv("SWIFTSPEC_COMMIT", "c0ffee")  # a tree without .git (GPU machine): as given
    assert results.package_commit() == "c0ffee"
    monkeypatch.delenv("SWIFTSPEC_COMMIT")
    monkeypatch.setattr(datasets, "PACKAGE_CHECKOUT", tmp_path / "no-repo")
    assert results.package_commit() == "unknown"


def test_compare_shows_whole_names_and_what_the_rows_are(tmp_path):
    names = ["swiftspec:d3:graft", "swiftspec:d4:graft", "swiftspec@1+1:d3:graft:persistent"]
    table = results.ResultsTable(tmp_path)
    for name in ["ar"] + names:
        table.append(make_row(name, target="llama-3-8b-long-target-name", draft="llama-3.2-1b-long-draft-name",
                              device="cuda", weights="random", acceptance="replayed", commit="a" * 40 + "-dirty"))
    res = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert res.exit_code == 0, res.stdout
    for name in names + ["llama-3-8b-long-target-name", "llama-3.2-1b-long-draft-name"]:
        assert f" {name} " in res.stdout, name
    assert "rows: cuda, random weights, replayed acceptance, commit aaaaaaa-dirty" in res.stdout.splitlines()
    md = CliRunner().invoke(app, ["compare", str(tmp_path), "--format", "markdown"]).stdout.splitlines()
    overall = [line for line in md if "overall" in line]  # what scripts grep: the table's rows, unchanged
    assert len(overall) == 4 and all(line.startswith("| llama-3-8b-long-target-name |") for line in overall)
    assert md[md.index(overall[-1]) + 1:][:2] == ["", "rows: cuda, random weights, replayed acceptance, "
                                                      "commit aaaaaaa-dirty"]


@pytest.mark.parametrize("commits, said", [
    (["b" * 40, "c" * 40], "mixed: 2 commits (bbbbbbb, ccccccc)"),
    (["unknown"], "commit unknown"),
    ([str(i) * 40 for i in range(6)], "mixed: 6 commits (0000000, 1111111, 2222222, 3333333, ...)"),
])
def test_the_rows_line_says_when_a_folder_mixes_commits(commits, said):
    frame = frame_of(*[make_row("ar", qid=str(i), commit=c) for i, c in enumerate(commits)])
    assert compare.rows_line(frame) == f"rows: cpu, real weights, real acceptance, {said}"
