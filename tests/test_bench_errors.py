"""Bad input: one line on stderr ("error: ..."), exit code 2, nothing written."""
from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from swiftspec_bench.cli import app

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "eagle"
needs_data = pytest.mark.skipif(not (DATA_DIR / "gsm8k.jsonl").exists(), reason=f"no datasets at {DATA_DIR}")


def base_args(out: Path, **over) -> list[str]:
    opts = {"--target": "tiny-llama", "--draft": "tiny-llama", "--systems": "hf-ar,hf-assisted",
            "--datasets": "gsm8k", "--limit": "1", "--max-new-tokens": "4", "--data-dir": str(DATA_DIR),
            "--out": str(out)} | over
    return ["run"] + [x for kv in opts.items() for x in kv]


def assert_user_error(args, *, contains: str, out: Path | None = None):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert contains in lines[0], lines[0]
    if out is not None:
        assert not out.exists(), "nothing may be written on bad input"
    return lines[0]


@pytest.mark.parametrize("over, contains", [
    ({"--target": "no-such-preset"}, "unknown preset"),
    ({"--draft": "./no/such/folder"}, "no such file or folder"),
    ({"--target": "missing.gguf"}, "no such file or folder"),
    ({"--datasets": "gsm8k,imagenet"}, "unknown dataset 'imagenet'"),
    ({"--systems": "hf-ar,medusa"}, "unknown system 'medusa'"),
    ({"--limit": "0"}, "--limit must be at least 1"),
    ({"--limit": "-3"}, "--limit must be at least 1"),
    ({"--max-new-tokens": "0"}, "--max-new-tokens must be at least 1"),
    ({"--max-new-tokens": "-5"}, "--max-new-tokens must be at least 1"),
    ({"--tree-bs": "0"}, "--tree-bs"),
    ({"--dtype": "float8"}, "--dtype float8"),
    ({"--device": "tpu"}, "--device tpu"),
    ({"--weights": "fake"}, "--weights fake"),
    ({"--data-dir": "/no/such/data/dir"}, "no such folder"),
])
def test_bad_options(tmp_path, over, contains):
    out = tmp_path / "out"
    assert_user_error(base_args(out, **over), contains=contains, out=out)


def test_cuda_without_a_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--device": "cuda"}), contains="no CUDA device", out=out)


def test_malformed_jsonl_names_file_and_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    good = '{"question_id": 0, "category": "math", "turns": ["ok"]}'
    (data / "gsm8k.jsonl").write_text(good + '\n{"question_id": 1, tur\n')
    out = tmp_path / "out"
    args = base_args(out, **{"--data-dir": str(data), "--limit": "5"})
    line = assert_user_error(args, contains="gsm8k.jsonl:2", out=out)
    assert "malformed" in line
    (data / "gsm8k.jsonl").write_text('{"question_id": 0, "category": "math", "turns": "not a list"}\n')
    assert_user_error(base_args(out, **{"--data-dir": str(data)}), contains="gsm8k.jsonl:1", out=out)


def test_out_is_an_existing_file(tmp_path):
    out = tmp_path / "a_file"
    out.write_text("keep me")
    assert_user_error(base_args(out), contains="existing file")
    assert out.read_text() == "keep me"


@needs_data
def test_prompt_longer_than_the_context(tmp_path):
    # tiny-llama has 2048 positions and a byte tokenizer; the first CNN/DailyMail article is longer
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--datasets": "sum"}), contains="exceeds the context of 2048", out=out)


@needs_data
def test_tokenizers_that_differ(tmp_path):
    from transformers import AutoModelForCausalLM

    from swiftspec_core.models.presets import PRESETS
    from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

    folder = tmp_path / "other-vocab"
    model = AutoModelForCausalLM.from_config(PRESETS["tiny-llama"].hf_config())
    tokenizer = tiny_tokenizer()
    tokenizer.add_tokens(["<|extra|>"])
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--draft": str(folder)}), contains="different vocabularies", out=out)


def test_compare_and_plot_bad_input(tmp_path):
    assert_user_error(["compare", str(tmp_path / "none")], contains="no such folder")
    assert_user_error(["compare", str(tmp_path)], contains="results.parquet")
    assert_user_error(["plot", str(tmp_path)], contains="results.parquet")
    assert_user_error(["compare", str(tmp_path), "--format", "xml"], contains="--format xml")
