"""What an audit as a user found: replayed acceptance (`--acceptance replay:FILE`: which recordings
a run may draw from, and the sources it refuses, each with one error line before any model loads),
and the files `swiftspec-bench kernels` meets in its --out."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from swiftspec_bench.cli import app
from swiftspec_bench.replay_source import ReplaySource
from swiftspec_bench.results import COLUMNS, ResultsTable
from test_kernel_bench import fake_gpu  # noqa: F401 -- the fixture: a GPU that is not there

DATA_DIR = Path(__file__).with_name("fixtures")


def recorded(folder: Path, *rows: tuple, accepted=(3, 2)) -> Path:
    """A real-acceptance source: one gsm8k row each (system, tree_bs, chain_k), graft off, each
    round emitting `accepted`."""
    table = ResultsTable(folder)
    for i, (system, tree_bs, chain_k) in enumerate(rows):
        table.append(dict.fromkeys(COLUMNS) | dict(
            system=system, target="t", draft="d", dataset="gsm8k", question_id=str(i), turn=1, acceptance="real",
            tree_bs=tree_bs, tree_w=8, chain_k=chain_k, graft="off", accepted_lengths=list(accepted),
            bonus_in_tree=[], draft_topk_logprobs=[], draft_steps=2))
    return folder


def run_args(out: Path, source, *extra: str) -> list[str]:
    return ["run", "--target", "tiny-llama", "--draft", "tiny-llama", "--weights", "random", "--device", "cpu",
            "--datasets", "gsm8k", "--data-dir", str(DATA_DIR), "--limit", "1", "--max-new-tokens", "4",
            "--out", str(out), "--acceptance", f"replay:{source}", *extra]


def test_a_system_replays_whatever_the_settings_it_does_not_use(tmp_path):
    # chain recorded at --tree-bs 8, tree at --chain-k 7: chain's rounds do not depend on --tree-bs
    # nor tree's on --chain-k (run_settings.SETTING_USERS). Before: "no measured chain rows ... with
    # these tree and graft settings", while the run's own note said --tree-bs changed nothing.
    source = recorded(tmp_path / "src", ("chain", 8, 7), ("tree", 12, 7))
    replay = ReplaySource(source, tree_bs=12, tree_w=8, chain_k=3, graft="off")
    with pytest.raises(Exception, match=r"its chain rows were recorded with --chain-k 7\)$"):
        replay.check(["chain"], ["gsm8k"])
    replay = ReplaySource(source, tree_bs=12, tree_w=8, chain_k=7, graft="off")
    replay.check(["chain", "tree"], ["gsm8k"])
    assert replay.profile("chain", "gsm8k").emitted == (3, 2) == replay.profile("tree", "gsm8k").emitted
    with pytest.raises(Exception, match=r"recorded with --tree-bs 12 --tree-w 8 --graft off\)$"):
        ReplaySource(source, tree_bs=8, tree_w=8, chain_k=7, graft="off").check(["tree"], ["gsm8k"])
    res = CliRunner().invoke(app, run_args(tmp_path / "out", source, "--systems", "chain", "--chain-k", "7"))
    assert res.exit_code == 0, (res.stdout, res.stderr)


def test_a_source_of_no_verification_round_is_refused_before_the_models_load(tmp_path):
    # A real run at --max-new-tokens 1 ends every answer in its prefill: rows of no round. Before:
    # the replayed run loaded its models, wrote ar's rows, then ended in a ValueError traceback
    # ("a replay profile needs at least one recorded round").
    source = recorded(tmp_path / "src", ("tree", 12, 7), accepted=())
    out = tmp_path / "out"
    assert_one_error_line(run_args(out, source, "--systems", "ar,tree", "--graft", "off"),
                          "its measured tree rows hold no verification round", out)


def test_lockstep_swiftspec_replays_the_recordings_of_the_d_it_runs(tmp_path, monkeypatch):
    # Before: in one process d was measured inside the decode, so the replay profile was drawn
    # with d unknown (None), pooling every recorded d (the bs-12 source's d = 3, 4 and 6 alike).
    import pandas as pd

    source = recorded(tmp_path / "src", *[("swiftspec", 12, 7)] * 3)
    table = ResultsTable(source)
    for row, d in zip(table.rows, (1, 2, 3)):  # one recording a d
        row["draft_steps"] = d
    table.write()
    asked = []
    profile = ReplaySource.profile
    monkeypatch.setattr(ReplaySource, "profile", lambda self, system, dataset, d=None:
                        asked.append(d) or profile(self, system, dataset, d))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, run_args(out, source, "--systems", "swiftspec", "--graft", "off"))
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    ran = pd.read_parquet(out / "results.parquet").draft_steps.tolist()
    assert asked and set(asked) == set(ran), (asked, ran)


def assert_one_error_line(args: list[str], contains: str, out: Path) -> None:
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and contains in lines[0], res.stderr
    assert "loading" not in res.stdout and not out.exists()


def test_a_source_file_is_checked_as_a_source_folder_is(tmp_path):
    # Before: a .csv named directly skipped the folder's checks (a table without `acceptance`: a
    # KeyError traceback; one of no rows alike), and a .parquet of another name than
    # results.parquet was refused though a .csv of any name was taken.
    source = recorded(tmp_path / "src", ("tree", 12, 7))
    text = (source / "results.csv").read_text().splitlines()
    header = text[0].split(",")
    at = header.index('"acceptance"')
    (tmp_path / "other.csv").write_text("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != at)
                                                  for line in text) + "\n")
    out = tmp_path / "out"
    assert_one_error_line(run_args(out, tmp_path / "other.csv", "--systems", "tree", "--graft", "off"),
                          "other.csv lacks the columns acceptance", out)
    (tmp_path / "header.csv").write_text(text[0] + "\n")
    assert_one_error_line(run_args(out, tmp_path / "header.csv", "--systems", "tree"), "header.csv has no rows", out)
    (tmp_path / "copied.parquet").write_bytes((source / "results.parquet").read_bytes())
    res = CliRunner().invoke(app, run_args(out, tmp_path / "copied.parquet", "--systems", "tree", "--graft", "off"))
    assert res.exit_code == 0, (res.stdout, res.stderr)


@pytest.mark.parametrize("damaged", [b"op,model,tp,m,context,impl,median_us,gbps,floor_us,device,commit,dtype\n"
                                     b"gemm_qkv,llama-3.2-1b,one,1,,ours,2.0,1.0,1.0,Fake H200,c,bfloat16\n",
                                     b"op,model,tp,m,context,impl,median_us,gbps,floor_us,device,commit,dtype\n"
                                     b"gemm_qkv,llama-3.2-1b,1,1,,triton,2.0,1.0,1.0,Fake H200,c,bfloat16\n",
                                     b"\xff\xfe not text\n"],
                         ids=["a number that does not parse", "an impl of no kernels run", "not UTF-8"])
def test_a_damaged_kernel_table_in_out_is_one_error_line(tmp_path, fake_gpu, damaged):
    # Before: the kernels command read --out's kernels.csv after it had started on the GPU, and a
    # value that did not parse (or a file not UTF-8) ended in a ValueError traceback.
    out = tmp_path / "k"
    out.mkdir()
    (out / "kernels.csv").write_bytes(damaged)
    res = CliRunner().invoke(app, ["kernels", "--models", "llama-3.2-1b", "--tp", "1", "--m", "1", "--ops", "rmsnorm",
                                   "--out", str(out)])
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "kernels.csv is not a kernel table" in lines[0]
    assert fake_gpu == [] and (out / "kernels.csv").read_bytes() == damaged


# --- python3 -m swiftspec_bench.random_checkpoint PRESET FOLDER ------------------------------------

def checkpoint(args: list[str], capsys) -> tuple[int, list[str]]:
    from swiftspec_bench.random_checkpoint import main

    try:
        code = main(args)
    except SystemExit as exc:  # argparse's usage errors exit
        code = exc.code
    return code, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("args, contains", [
    ([], "the following arguments are required"),
    (["tiny-llama", "{tmp}/new", "--seed", "x"], "--seed: invalid int value"),
    (["tiny-llama", "{tmp}/new", "--seed", str(2 ** 70)], "must be within +-2^62"),
    (["tiny-llama", "{tmp}/new", "--device", "gpu"], "invalid choice: 'gpu'"),
    (["tiny-llama", ""], "FOLDER is empty"),
    (["tiny-llama", "{tmp}/taken"], "holds files already"),
    (["tiny-llama", "{tmp}/taken/config.json"], "is an existing file"),
])
def test_a_bad_checkpoint_folder_or_option_is_one_error_line(tmp_path, capsys, monkeypatch, args, contains):
    # Before: argparse's usage text, a traceback for a file or a seed past 64 bits, a folder of
    # another checkpoint written over (its other parts kept), "" written into the current folder.
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path / "taken")  # where "" would have written
    code, lines = checkpoint([a.format(tmp=tmp_path) for a in args], capsys)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and contains in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"] and [p.name for p in (tmp_path / "taken").iterdir()] \
        == ["config.json"]


def test_an_interrupted_checkpoint_leaves_no_folder(tmp_path, capsys, monkeypatch):
    # Before: the parts written so far stayed in FOLDER, a checkpoint with parts missing.
    import safetensors.torch

    written = []

    def save_then_stop(tensors, path, **kw):
        if written:
            raise KeyboardInterrupt
        written.append(path)
        save(tensors, path, **kw)

    save = safetensors.torch.save_file
    monkeypatch.setattr(safetensors.torch, "save_file", save_then_stop)
    code, lines = checkpoint(["tiny-llama", str(tmp_path / "ck"), "--device", "cpu"], capsys)
    assert code == 2 and lines == ["error: interrupted"] and written
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its temporary sibling
    monkeypatch.setattr(safetensors.torch, "save_file", save)
    (tmp_path / "ck").mkdir()  # an empty folder is taken
    assert checkpoint(["tiny-llama", str(tmp_path / "ck"), "--device", "cpu"], capsys)[0] == 0
    assert (tmp_path / "ck" / "model.safetensors.index.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["ck"]
