"""Our systems across processes through the CLI (gloo on CPU): ar and tree over TP 2, swiftspec split
1+1, all lossless against in-process ar; then a random-weight run replaying that run's acceptance."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from swiftspec_bench.cli import app
from swiftspec_bench.replay_source import ReplaySource

DATA_DIR = Path(__file__).with_name("fixtures")


def run(out: Path, *extra: str):
    args = ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--datasets", "gsm8k", "--limit", "1",
            "--max-new-tokens", "16", "--data-dir", str(DATA_DIR), "--out", str(out), "--device", "cpu",
            *extra]  # gloo on CPU, on a GPU machine too
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)


def test_placements_lossless_then_replayed(tmp_path, monkeypatch):
    from swiftspec_bench import runner

    placed, load = [], runner._load
    monkeypatch.setattr(runner, "_load", lambda role, spec, **how: placed.append(str(how["device"])) or
                        load(role, spec, **how))
    real = tmp_path / "real"
    run(real, "--systems", "ar,swiftspec", "--draft-steps", "2")  # in process
    run(real, "--systems", "ar,tree,swiftspec", "--tp", "2", "--split", "1+1", "--draft-steps", "2")
    # the second run's systems all live in workers: its own process holds the models' shapes only
    assert placed == ["cpu", "cpu", "meta", "meta"]
    frame = pd.read_parquet(real / "results.parquet")
    # grafting is on by default: the tree decoders' labels say so
    assert set(frame.system) == {"ar", "swiftspec:d2:graft", "ar@tp2", "tree@tp2:graft", "swiftspec@1+1:d2:graft"}
    assert frame.output_sha.nunique() == 1  # every placement emitted the target's greedy tokens
    assert ((frame.prefill_s > 0) & (frame.prefill_s < frame.latency_s)).all()
    split = frame[frame.system == "swiftspec@1+1:d2:graft"].iloc[0]
    lockstep = frame[frame.system == "swiftspec:d2:graft"].iloc[0]
    assert list(split.accepted_lengths) == list(lockstep.accepted_lengths)
    assert len(split.link_wait_s) == len(split.draft_parallel_s) == split.rounds
    res = CliRunner().invoke(app, ["compare", str(real)])
    assert res.exit_code == 0 and "lossless: yes" in res.stdout

    # d measured by the workers: the replayed swiftspec draws from recordings of that d.
    asked = []
    profile = ReplaySource.profile
    monkeypatch.setattr(ReplaySource, "profile",
                        lambda self, system, dataset, d=None: asked.append((system, d)) or profile(self, system, dataset, d))
    replayed = tmp_path / "replayed"
    run(replayed, "--systems", "ar,tree,swiftspec", "--weights", "random", "--acceptance", f"replay:{real}",
        "--split", "1+1")
    rows = pd.read_parquet(replayed / "results.parquet")
    # Each request's d comes from the rounds before it (README: --draft-steps), the warm-up's included
    # (runner.replayed: a warm-up may lower it), so on a loaded machine the warm-up and the requests
    # may run different d: the source is asked for every d a row ran, and besides only the warm-up's.
    ds = {int(d) for d in rows[rows.system == "swiftspec@1+1:graft"].draft_steps}
    swiftspec_asks = [d for system, d in asked if system == "swiftspec"]
    assert min(ds) >= 1 and ds <= set(swiftspec_asks) <= ds | {swiftspec_asks[0]}
    assert set(rows.acceptance) == {"replayed"} and set(rows.weights) == {"random"}
    drawn = set(frame[frame.system == "tree@tp2:graft"].accepted_lengths.iloc[0])
    assert set(rows[rows.system == "tree:graft"].accepted_lengths.iloc[0][:-1]) <= drawn  # the last is cut by the budget
    res = CliRunner().invoke(app, ["compare", str(replayed)])
    assert res.exit_code == 0 and "not checked" in res.stdout


def test_replay_needs_a_source_with_the_system(tmp_path):
    real = tmp_path / "real"
    run(real, "--systems", "ar")
    res = CliRunner().invoke(app, ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--systems", "tree",
                                   "--datasets", "gsm8k", "--data-dir", str(DATA_DIR), "--out", str(tmp_path / "x"),
                                   "--acceptance", f"replay:{real}"])
    assert res.exit_code == 2 and "nothing to replay (it holds no measured tree rows)" in res.stderr
    run(real, "--systems", "tree", "--graft", "off")  # recorded without grafting; the runs default to it
    res = CliRunner().invoke(app, ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--systems", "tree",
                                   "--datasets", "gsm8k", "--data-dir", str(DATA_DIR), "--out", str(tmp_path / "z"),
                                   "--acceptance", f"replay:{real}"])
    assert res.exit_code == 2 and "tree rows were recorded with --tree-bs 12 --tree-w 8 --graft off" \
        in res.stderr, res.stderr
    res = CliRunner().invoke(app, ["run", "--systems", "ar", "--acceptance", "replay:/no/such", "--out",
                                   str(tmp_path / "y")])
    assert res.exit_code == 2 and "no such file" in res.stderr
    res = CliRunner().invoke(app, ["run", "--systems", "swiftspec", "--split", "1-1", "--out", str(tmp_path / "z")])
    assert res.exit_code == 2 and "--split" in res.stderr


def test_interleave_runs_every_system_on_a_query_before_the_next(tmp_path, monkeypatch):
    """--interleave: rows come query by query, each system's workers start once and stay up to the
    end (so a machine's drift during the run falls on both systems), and the tokens are the same."""
    from swiftspec_core.runtime.service import WorkerPool

    closed = []
    close = WorkerPool.close
    monkeypatch.setattr(WorkerPool, "close", lambda self: closed.append(len(rows_so_far())) or close(self))
    out = tmp_path / "interleaved"

    def rows_so_far():
        return pd.read_parquet(out / "results.parquet") if (out / "results.parquet").exists() else []

    run(out, "--systems", "tree,swiftspec", "--tp", "2", "--split", "1+1", "--draft-steps", "2",
        "--datasets", "gsm8k,humaneval", "--interleave")
    frame = pd.read_parquet(out / "results.parquet")
    assert list(zip(frame.dataset, frame.system)) == [(d, s) for d in ("gsm8k", "humaneval")
                                                      for s in ("tree@tp2:graft", "swiftspec@1+1:d2:graft")]
    assert closed == [4, 4]  # both pools closed at the end, none between queries
    assert frame.groupby("dataset").output_sha.nunique().eq(1).all()
