"""Bad input: one line on stderr ("error: ..."), exit code 2, nothing written, found before any
model loads where it can be. Prompts: tests/fixtures."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from swiftspec_bench.cli import app
from swiftspec_core.errors import UserError

DATA_DIR = Path(__file__).with_name("fixtures")


def base_args(out: Path, **over) -> list[str]:
    opts = {"--target": "tiny-llama", "--draft": "tiny-llama", "--systems": "hf-ar,hf-assisted",
            "--datasets": "gsm8k", "--limit": "1", "--max-new-tokens": "4", "--data-dir": str(DATA_DIR),
            "--out": str(out), "--device": "cpu"} | over  # the CPU path, on a GPU machine too
    return ["run"] + [x for kv in opts.items() for x in kv]


def assert_user_error(args, *, contains: str, out: Path | None = None, before_loading: bool = True):
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert contains in lines[0], lines[0]
    if out is not None:
        assert not out.exists(), "nothing may be written on bad input"
    if before_loading:
        assert "loading" not in res.stdout, "found only after a model loaded"
    return lines[0]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


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
    ({"--systems": "ar,tree", "--split": "1+1"}, "--split 1+1 places swiftspec's target and draft, and --systems has no"),
    ({"--systems": "hf-ar,swiftspec", "--tp": "2"}, "--tp 2 runs ar, chain and tree over 2 processes"),
    ({"--systems": "ar", "--tp": "2", "--quant": "awq"}, "--quant awq: tiny-llama's target cannot be split over 2"),
    ({"--dtype": "float8"}, "--dtype float8"),
    ({"--device": "tpu"}, "--device tpu"),
    ({"--weights": "fake"}, "--weights fake"),
    ({"--kernels": "triton"}, "--kernels triton"),
    ({"--kernels": "fused"}, "--kernels fused runs bfloat16 on a GPU"),
    ({"--data-dir": "/no/such/data/dir"}, "no such folder"),
    ({"--datasets": "gsm8k,/no/such/prompts.jsonl"}, "no such file"),
    ({"--datasets": f"gsm8k,{DATA_DIR / 'gsm8k.jsonl'}"}, "two datasets are named 'gsm8k'"),
    ({"--split": ""}, "--split ''"),  # given empty: not taken for no split
    ({"--systems": "ar", "--tp": str((os.cpu_count() or 1) * 4 + 1)}, "on the cpu at most 4 a core"),
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


def test_a_prompts_file_that_is_not_utf8_json_objects_or_a_file(tmp_path):
    good = json.dumps({"question_id": 0, "turns": ["ok"]}) + "\n"
    out = tmp_path / "out"
    for name, data, contains in (("bytes", b"\xff\xfe\n", "bytes.jsonl:2: not UTF-8 text"),
                                 ("array", b'["a question"]\n', "array.jsonl:2: malformed line (want a JSON object")):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(good.encode() + data)
        assert_user_error(base_args(out, **{"--datasets": str(path), "--limit": "5"}), contains=contains, out=out)
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    assert_user_error(base_args(out, **{"--datasets": str(folder)}), contains="is a folder, not a .jsonl file", out=out)


def test_replayed_acceptance_needs_random_weights(tmp_path):
    # replayed rounds are not the target's greedy tokens: rows of a real target would claim them
    out = tmp_path / "out"
    args = base_args(out, **{"--target": "qwen2.5-coder-1.5b", "--draft": "qwen2.5-coder-0.5b", "--weights": "real",
                             "--systems": "ar,tree", "--acceptance": f"replay:{tmp_path}"})
    assert_user_error(args, contains="is for --weights random", out=out)


def test_a_lock_held_by_a_live_process_says_how_to_recover(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".lock").write_text(f"{os.getpid()}\n")  # alive (this test), and not a run
    line = assert_user_error(base_args(out), contains=f"in use by another run (pid {os.getpid()})")
    assert f"if no run is using it, delete {out / '.lock'}" in line
    assert (out / ".lock").exists()


def test_out_is_an_existing_file(tmp_path):
    out = tmp_path / "a_file"
    out.write_text("keep me")
    assert_user_error(base_args(out), contains="existing file")
    assert out.read_text() == "keep me"


def test_unwritable_out_is_found_before_loading(tmp_path):
    locked = tmp_path / "read-only"
    locked.mkdir()
    locked.chmod(0o555)
    # root writes anywhere a mode allows nothing: then a folder no one can create files in
    out = (locked if not os.access(locked, os.W_OK) else Path("/proc")) / "run"
    assert_user_error(base_args(out), contains="cannot write in", out=out)


@pytest.mark.parametrize("files, contains", [
    ({}, "not a model folder (no config.json)"),
    ({"config.json": "{}"}, "holds no weights"),
    ({"model.gguf": "not a gguf at all"}, "not a GGUF file"),
])
def test_model_files_that_cannot_load(tmp_path, files, contains):
    folder = tmp_path / "model"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    spec = folder / "model.gguf" if "model.gguf" in files else folder
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--target": str(spec)}), contains=contains, out=out)


def test_a_damaged_gguf_is_one_line(tmp_path):
    # past the magic bytes the check before loading cannot see: the loader's own error, one line
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x07" * 21)
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--target": str(damaged)}), contains="cannot load model", out=out,
                      before_loading=False)


@pytest.mark.parametrize("datasets", ["gsm8k", "humaneval,gsm8k"])
def test_an_empty_dataset_file(tmp_path, datasets):
    data = tmp_path / "data"
    data.mkdir()
    (data / "gsm8k.jsonl").write_text("\n")
    (data / "humaneval.jsonl").write_text((DATA_DIR / "humaneval.jsonl").read_text())
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--data-dir": str(data), "--datasets": datasets}),
                      contains="gsm8k.jsonl holds no questions", out=out)


def test_question_ids_met_twice(tmp_path):
    mine = write_jsonl(tmp_path / "mine.jsonl", [{"question_id": 1, "turns": ["a"]}, {"question_id": 2, "turns": ["b"]},
                                                 {"question_id": 1, "turns": ["c"]}])
    out = tmp_path / "out"
    assert_user_error(base_args(out, **{"--datasets": str(mine), "--limit": "5"}),
                      contains="mine.jsonl:3: question_id 1 appears twice", out=out)


def context_filling_prompt(extra: int) -> str:
    """A user turn whose chat prompt needs exactly tiny-llama's 2048 positions (+ `extra`) under
    base_args (4 new tokens; a tree of the default --tree-bs, a chain of 7 + 1; one pending token):
    the byte tokenizer makes each ASCII character one token."""
    from swiftspec_bench.cli import DEFAULT_CHAIN_K, DEFAULT_TREE_BS
    from swiftspec_bench.datasets import chat_prompt_ids
    from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

    template = len(chat_prompt_ids(tiny_tokenizer(), ["x"], [])) - 1
    return "x" * (2048 - 4 - max(DEFAULT_TREE_BS, DEFAULT_CHAIN_K + 1) - 1 - template + extra)


def test_prompt_that_exactly_fills_the_context(tmp_path, monkeypatch):
    out = tmp_path / "out"
    fits = write_jsonl(tmp_path / "fits.jsonl", [{"question_id": 0, "turns": [context_filling_prompt(0)]}])
    res = CliRunner().invoke(app, base_args(out, **{"--datasets": str(fits),
                                                    "--systems": "ar,tree"}))
    assert res.exit_code == 0, (res.stderr, res.exception)
    assert len(pd.read_parquet(out / "results.parquet")) == 2
    over = write_jsonl(tmp_path / "over.jsonl", [{"question_id": 0, "turns": [context_filling_prompt(1)]}])
    out = tmp_path / "out2"
    from swiftspec_core.models import loading  # one too long: found before any weight is drawn or read

    monkeypatch.setattr(loading, "_random_loaded", lambda *a, **k: pytest.fail("weights drawn before the check"))
    assert_user_error(base_args(out, **{"--datasets": str(over), "--systems": "ar"}),
                      contains="exceeds the context of 2048", out=out, before_loading=False)


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
    assert_user_error(base_args(out, **{"--draft": str(folder)}), contains="different vocabularies", out=out,
                      before_loading=False)


def test_compare_and_plot_bad_input(tmp_path):
    assert_user_error(["compare", str(tmp_path / "none")], contains="no such folder")
    assert_user_error(["compare", str(tmp_path)], contains="results.parquet")
    assert_user_error(["plot", str(tmp_path)], contains="results.parquet")
    assert_user_error(["compare", str(tmp_path), "--format", "xml"], contains="--format xml")
    pd.DataFrame({"system": ["ar"], "target": ["t"], "draft": ["d"], "dataset": ["gsm8k"], "question_id": ["0"],
                  "turn": [1]}).to_parquet(tmp_path / "results.parquet")
    for command in ("compare", "plot"):
        assert_user_error([command, str(tmp_path)], contains="lacks the columns new_tokens")


def test_fused_kernels_take_forwards_of_at_most_16_tokens_and_their_shapes():
    from types import SimpleNamespace

    from swiftspec_bench.kernel_choice import choose

    big = ["llama-3-8b", "llama-3.2-1b"]  # head_dim 128 and 64: shapes the kernels take
    ok = SimpleNamespace(kernels="fused", tree_bs=16, tree_w=8, graft="ngram", graft_len=7, chain_k=7)
    assert choose(ok, "cuda", "bfloat16", *big, 1) == "fused"
    assert choose(SimpleNamespace(**{**vars(ok), "kernels": "torch", "tree_bs": 64}), "cpu", "float32", *big, 1) == "torch"
    auto = SimpleNamespace(**{**vars(ok), "kernels": "auto"})  # persistent, else fused wherever it can run, else torch
    assert choose(auto, "cuda", "bfloat16", *big, 1) == "fused"  # 16 tree tokens: 512 draft rows, over 384
    assert [choose(auto, *where, *big, 1) for where in (("cpu", "float32"), ("cuda", "float32"))] == ["torch"] * 2
    assert choose(SimpleNamespace(**{**vars(auto), "tree_bs": 32}), "cuda", "bfloat16", *big, 1) == "torch"
    assert choose(auto, "cuda", "bfloat16", "tiny-llama", None, 0) == "torch"  # head_dim 16
    assert choose(auto, "cuda", "bfloat16", "org/unknown-model", None, 0) == "torch"  # shape unknown before loading
    for over, contains in (({"tree_bs": 17}, "--tree-bs is 17"), ({"graft_len": 8}, "a draft step"),
                           ({"chain_k": 16}, "a chain verification")):
        with pytest.raises(UserError, match=contains):
            choose(SimpleNamespace(**{**vars(ok), **over}), "cuda", "bfloat16", *big, 1)
    with pytest.raises(UserError, match="tiny-llama has head_dim 16"):
        choose(ok, "cuda", "bfloat16", "tiny-llama", None, 0)
    choose(SimpleNamespace(**{**vars(ok), "graft": "off", "graft_len": 8}), "cuda", "bfloat16", *big, 1)


def test_a_persistent_draft_is_refused_where_the_persistent_kernel_cannot_run_it():
    from types import SimpleNamespace

    from swiftspec_bench.kernel_choice import choose

    ok = SimpleNamespace(kernels="persistent", tree_bs=12, tree_w=8, graft="off", graft_len=0, chain_k=7)
    assert choose(ok, "cuda", "bfloat16", "llama-3-8b", "llama-3.2-1b", 1) == "persistent"
    assert choose(ok, "cuda", "bfloat16", "llama-3-8b", None, 0) == "persistent"  # ar only: on its target
    for over, draft, gpus, contains in (
            ({}, "llama-3.2-3b", 1, "llama-3.2-3b: the persistent forward its kernel is built for Llama-3.2-1B's"),
            ({}, "qwen2.5-coder-0.5b", 1, "without a qkv bias"),
            ({}, "org/unknown-draft", 1, "the draft's shape must be known before loading"),
            ({}, "llama-3.2-1b", 2, "runs the draft on one GPU; this run shards it over 2"),
            ({"tree_bs": 16}, "llama-3.2-1b", 1, "keeps 512 cache rows; its masks hold 384")):
        with pytest.raises(UserError, match=contains):
            choose(SimpleNamespace(**{**vars(ok), **over}), "cuda", "bfloat16", "llama-3-8b", draft, gpus)
    with pytest.raises(UserError, match="--kernels persistent runs bfloat16 on a GPU"):
        choose(ok, "cpu", "float32", "llama-3-8b", "llama-3.2-1b", 1)


def test_auto_takes_the_persistent_kernel_where_the_draft_or_a_lone_target_runs_it_else_fused():
    from types import SimpleNamespace

    from swiftspec_bench.kernel_choice import choose

    auto = SimpleNamespace(kernels="auto", tree_bs=12, tree_w=8, graft="ngram", graft_len=3, chain_k=7, quant="none")
    assert choose(auto, "cuda", "bfloat16", "llama-3-8b", "llama-3.2-1b", 1) == "persistent"
    assert choose(auto, "cuda", "bfloat16", "llama-3-8b", None, 0) == "persistent"  # no draft: the target takes it
    assert choose(auto, "cuda", "bfloat16", "llama-3.2-3b", None, 0) == "fused"  # nor that target
    assert choose(SimpleNamespace(**{**vars(auto), "quant": "awq"}), "cuda", "bfloat16", "llama-3-8b", None,
                  0) == "fused"
    assert choose(auto, "cuda", "bfloat16", "llama-3-8b", "llama-3.2-3b", 1) == "fused"  # not the 1B's shape
    assert choose(auto, "cuda", "bfloat16", "llama-3-8b", "llama-3.2-1b", 2) == "fused"  # a draft over two GPUs
    assert choose(SimpleNamespace(**{**vars(auto), "tree_bs": 16}), "cuda", "bfloat16", "llama-3-8b",
                  "llama-3.2-1b", 1) == "fused"  # its tree's rows past the masks
    assert choose(auto, "cpu", "float32", "llama-3-8b", "llama-3.2-1b", 1) == "torch"


def test_the_target_takes_the_persistent_kernel_where_it_is_8b_shaped_and_its_verifications_narrow():
    from types import SimpleNamespace

    from swiftspec_bench.kernel_choice import PERSISTENT_TARGET_WIDTH, known_args, persistent_target

    o = SimpleNamespace(tree_bs=12, tree_w=8, chain_k=7, quant="none")
    eight_b = known_args("llama-3-8b")
    assert persistent_target(o, eight_b, ["ar", "chain", "hf-ar"])  # widths 1 and 8
    assert not persistent_target(o, eight_b, ["ar", "tree"])  # 12 tokens a tree
    assert persistent_target(SimpleNamespace(**{**vars(o), "tree_bs": PERSISTENT_TARGET_WIDTH}), eight_b,
                             ["tree", "swiftspec"])
    assert not persistent_target(SimpleNamespace(**{**vars(o), "chain_k": 8}), eight_b, ["chain"])
    assert not persistent_target(SimpleNamespace(**{**vars(o), "quant": "awq"}), eight_b, ["ar"])
    assert not persistent_target(o, known_args("llama-3.2-1b"), ["ar"])  # the draft build: not exact in trees
    assert not persistent_target(o, None, ["ar"])  # not known before loading


def test_the_draft_gpus_are_the_widest_draft_engine():
    from swiftspec_bench.placement import draft_gpus

    assert draft_gpus(["ar", "hf-ar"], 2, None) == 0
    assert draft_gpus(["ar", "tree", "swiftspec"], 1, (1, 1)) == 1
    assert draft_gpus(["swiftspec"], 2, (1, 2)) == 2
    assert draft_gpus(["swiftspec"], 2, None) == 1  # lockstep: one process
    assert draft_gpus(["chain"], 2, None) == 2  # its draft shares the target's TP processes


def test_a_kernel_list_runs_each_set_once():
    from types import SimpleNamespace

    from swiftspec_bench.kernel_choice import choose_sets

    big = ["llama-3-8b", "llama-3.2-1b"]
    o = SimpleNamespace(kernels="fused,persistent", tree_bs=12, tree_w=8, graft="off", graft_len=0, chain_k=7,
                        quant="none")
    assert choose_sets(o, "cuda", "bfloat16", *big, 1) == ("fused", "persistent")
    assert choose_sets(SimpleNamespace(**{**vars(o), "kernels": "auto,fused"}), "cuda", "bfloat16", *big, 1) == (
        "persistent", "fused")
    assert choose_sets(SimpleNamespace(**{**vars(o), "kernels": "auto,fused"}), "cuda", "bfloat16", "llama-3.2-3b",
                       None, 0) == ("fused",)
    assert choose_sets(SimpleNamespace(**{**vars(o), "kernels": "torch,torch"}), "cpu", "float32", *big, 1) == ("torch",)
    with pytest.raises(UserError, match="an empty name"):
        choose_sets(SimpleNamespace(**{**vars(o), "kernels": "fused,"}), "cuda", "bfloat16", *big, 1)
    with pytest.raises(UserError, match="--kernels persistent runs bfloat16 on a GPU"):
        choose_sets(SimpleNamespace(**{**vars(o), "kernels": "torch,persistent"}), "cpu", "float32", *big, 1)
    # Spaces after the commas, as --systems and --datasets take them (before: "--kernels auto: choose
    # torch, fused, persistent or auto", the name it refused among those it listed)
    assert choose_sets(SimpleNamespace(**{**vars(o), "kernels": "torch, auto"}), "cpu", "float32", *big, 1) == (
        "torch",)
    with pytest.raises(UserError, match="an empty name"):
        choose_sets(SimpleNamespace(**{**vars(o), "kernels": "torch, "}), "cpu", "float32", *big, 1)


def test_a_kernel_list_plans_each_system_under_each_set_once_a_row_name(tmp_path):
    """Where the persistent kernel does not take the target, ar runs fused under persistent too: one
    ar row a query; tree once a set; with --interleave every (system, set) on a query before the
    next query. Where it takes the target, ar:persistent is a row of its own."""
    from types import SimpleNamespace

    from swiftspec_bench import runner
    from swiftspec_bench.results import ResultsTable

    o = SimpleNamespace(target="tiny-llama", draft="tiny-llama", weights="random", tree_bs=12, tree_w=8, chain_k=7,
                        seed=0, max_new_tokens=8, draft_noise=0.0, quant="none", tp=1, draft_steps=None, graft="off",
                        graft_len=6, interleave=True)
    queries = [SimpleNamespace(dataset="qa", question_id=i, turns=("hi",)) for i in (1, 2)]
    checked = SimpleNamespace(options=o, systems=["ar", "tree"], split=None, queries=queries, device="cuda",
                              dtype="bfloat16", replay=None, replay_digest="", kernels=("fused", "persistent"),
                              persistent_target=False, graft_sizes=(3, 2), needs_draft=True)
    planned = runner.plan(checked, ResultsTable(tmp_path))
    assert list(planned.labels.values()) == ["ar:fused", "tree:fused", "tree:persistent"]
    assert [(planned.labels[u], q.question_id) for u, q, _ in planned.todo] == [
        (name, i) for i in (1, 2) for name in ("ar:fused", "tree:fused", "tree:persistent")]
    taken = runner.plan(SimpleNamespace(**{**vars(checked), "persistent_target": True}), ResultsTable(tmp_path / "b"))
    assert list(taken.labels.values()) == ["ar:fused", "ar:persistent", "tree:fused", "tree:persistent"]


@pytest.mark.parametrize("args, says", [(["run", "--bogus", "1"], "No such option: --bogus"),
                                        (["run", "--limit", "abc"], "Invalid value for '--limit'"),
                                        (["compare"], "Missing argument"), (["nosuch"], "No such command")])
def test_arguments_the_parser_refuses_end_in_one_error_line(args, says, capsys):
    """What click itself refuses (main's path: the console script, python -m) ends as every other
    bad input: one error line, exit 2, not its boxed usage text."""
    from swiftspec_bench.cli import run_app

    assert run_app(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
