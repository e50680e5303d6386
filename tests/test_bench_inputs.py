"""A user's own prompts and a tuner's flags, as a demanding user gives them: each bad one ends with
one error line and exit 2 before any model loads where it can be (a traceback mid-run or rows
under a name like "None" before); Ctrl-C that lands in the first seconds, among the imports."""
from __future__ import annotations

import json
import signal

import pandas as pd
import pytest
from typer.testing import CliRunner

from swiftspec_bench import cli, kernel_choice, runner
from swiftspec_bench.cli import app
from test_bench_errors import assert_user_error, base_args


@pytest.mark.parametrize("line, says", [
    ('{"question_id": null, "turns": ["a"]}', "`question_id` must be a number or a non-empty string, not null"),
    ('{"question_id": true, "turns": ["a"]}', "not true"),
    ('{"question_id": [1, 2], "turns": ["a"]}', "not [1, 2]"),
    ('{"question_id": NaN, "turns": ["a"]}', "not NaN"),
    ('{"question_id": "", "turns": ["a"]}', 'not ""'),
    # a lone surrogate escape: the tokenizer failed on it after loading (TypeError, exit 1)
    ('{"question_id": 1, "turns": ["\\ud800"]}', "escape that is half a character, not text"),
    ('{"question_id": 1, "category": "\\udfff", "turns": ["a"]}', "escape that is half a character"),
])
def test_a_question_that_is_not_the_format(tmp_path, line, says):
    mine = tmp_path / "mine.jsonl"
    mine.write_text(line + "\n")
    out = tmp_path / "out"
    line = assert_user_error(base_args(out, **{"--datasets": str(mine)}), contains=says, out=out)
    assert "mine.jsonl:1: malformed line (" in line


def test_a_byte_order_mark_is_not_part_of_the_first_question(tmp_path):
    # Windows editors save UTF-8 with one; json refused the first line ("Unexpected UTF-8 BOM")
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes(b"\xef\xbb\xbf" + json.dumps({"question_id": 7, "turns": ["hi"]}).encode() + b"\r\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, base_args(out, **{"--datasets": str(mine), "--systems": "ar"}))
    assert res.exit_code == 0, res.stderr
    assert pd.read_parquet(out / "results.parquet").question_id.tolist() == ["7"]


def test_a_second_turn_fits_the_caches_however_its_answer_re_tokenizes(tmp_path):
    # Turn 2 carries turn 1's answer as text, tokenized again: under the byte tokenizer a random
    # model's answer can come back longer (a lone byte of a character decodes to U+FFFD, 3 bytes).
    # Before: caches sized for the answer's own count, and in mt_bench 901's turn 2 a ValueError
    # traceback ("539 prompt tokens + 256 new ones (+ one tree) need 808 positions; the engine
    # holds 713") after turn 1's row was written.
    out = tmp_path / "out"
    res = CliRunner().invoke(app, base_args(out, **{"--datasets": "mt_bench", "--systems": "ar",
                                                    "--max-new-tokens": "256"}))
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    rows = pd.read_parquet(out / "results.parquet")
    assert rows.turn.tolist() == [1, 2] and rows.prompt_tokens[1] > rows.prompt_tokens[0] + 256
    from swiftspec_bench.datasets import retokenized_width
    from swiftspec_core.models.loading import tiny_tokenizer

    assert retokenized_width(tiny_tokenizer()) == 3


def test_a_later_turn_past_the_caches_bound_is_one_error_line(tmp_path, monkeypatch):
    # Where the bound itself falls short (here made to: each token re-tokenizing to one), turn 2's
    # prompt no longer fits the caches: the engine's ValueError was a traceback; now one line, and
    # turn 1's row is kept.
    from swiftspec_bench import datasets

    monkeypatch.setattr(datasets, "retokenized_width", lambda tokenizer: 1)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, base_args(out, **{"--datasets": "mt_bench", "--systems": "ar",
                                                    "--max-new-tokens": "256"}))
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, (res.stderr, res.exception)
    assert res.stderr.startswith("error: mt_bench question ") and "turn 2: " in res.stderr
    assert "the caches were sized to before the earlier answers existed" in res.stderr
    assert pd.read_parquet(out / "results.parquet").turn.tolist() == [1]


@pytest.mark.parametrize("over, contains", [
    # ignored before: swiftspec's d with no swiftspec (as --split without it is refused)
    ({"--systems": "ar,tree", "--draft-steps": "3"}, "--draft-steps 3 sets swiftspec's d, and --systems has no"),
    # a node's children are the draft's top-k tokens: torch's topk failed mid-run (exit 1)
    ({"--systems": "tree", "--tree-w": "1000"}, "--tree-w 1000: a node has at most 384 children"),
    # torch.manual_seed overflowed after the models loaded (ValueError, exit 1)
    ({"--systems": "ar", "--seed": str(10 ** 20)}, "--seed 100000000000000000000: must be within +-2^62"),
    # NaN passed the "at least 0" check and drew a draft of NaNs
    ({"--systems": "tree", "--weights": "random", "--draft-noise": "nan"}, "--draft-noise must be a finite number"),
    ({"--systems": "tree", "--weights": "random", "--draft-noise": "inf"}, "--draft-noise must be a finite number"),
    # Path("") is the current folder: the rows landed there
    ({"--out": ""}, "--out is empty"),
])
def test_flags_a_tuner_tries(tmp_path, over, contains):
    out = tmp_path / "out"
    assert_user_error(base_args(out, **over), contains=contains, out=out)


def test_a_tree_wider_than_a_draft_whose_shape_loading_tells(tmp_path, monkeypatch):
    # a .gguf or hub draft: its vocabulary is known once it loads, still before any decode
    monkeypatch.setattr(kernel_choice, "known_args", lambda spec: None)
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--systems": "tree", "--tree-w": "1000"}),
                      contains="--tree-w 1000: a node has at most 384 children", before_loading=False)
    assert not (out / "results.parquet").exists()


@pytest.fixture
def interrupts(monkeypatch):
    """main's Ctrl-C handler as if installed (its flag put back afterwards)."""
    monkeypatch.setattr(cli.Interrupts, "seen", False)
    return cli.Interrupts


def ctrl_c(interrupts):
    """What the handler does on Ctrl-C: note it, raise KeyboardInterrupt."""
    interrupts.handler(signal.SIGINT, None)


def test_ctrl_c_before_a_command_handles_it_is_one_error_line(tmp_path, monkeypatch, capsys):
    # Ctrl-C while a command imports (`from . import runner`: torch, transformers) reaches typer,
    # whose 0.2x versions turn it into a bare exit 130: nothing said
    @cli.contextlib.contextmanager
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(cli, "user_errors", interrupted)
    assert cli.run_app(["compare", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == ["error: interrupted"]


def test_ctrl_c_that_an_import_turned_into_another_error(tmp_path, interrupts, monkeypatch, capsys):
    # numpy's and transformers' imports met mid-way by Ctrl-C raised ImportError ("cannot load
    # module more than once per process"), ModuleNotFoundError or RecursionError: tracebacks
    def validate(options):
        try:
            ctrl_c(interrupts)
        except KeyboardInterrupt:
            raise ImportError("cannot load module more than once per process") from None

    monkeypatch.setattr(runner, "validate", validate)
    out = tmp_path / "out"
    assert cli.run_app(base_args(out)) == 2
    assert capsys.readouterr().err.splitlines() == ["error: interrupted"]


def test_ctrl_c_that_an_import_swallowed_still_ends_the_run(tmp_path, interrupts, monkeypatch, capsys):
    # 1 of 21 Ctrl-Cs at 0.4-0.55 s vanished inside an import: the run went on and wrote its rows, exit 0
    real = runner.validate

    def validate(options):
        try:
            ctrl_c(interrupts)
        except KeyboardInterrupt:
            pass
        return real(options)

    monkeypatch.setattr(runner, "validate", validate)
    out = tmp_path / "out"
    assert cli.run_app(base_args(out)) == 2
    assert capsys.readouterr().err.splitlines() == ["error: interrupted"]
    assert not out.exists()
