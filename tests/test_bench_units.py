"""The pieces of the suite on their own: datasets and prompts, the results table, compare's numbers
and losslessness check, the peers' round accounting, figure titles."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from swiftspec_bench import compare, datasets as ds, results
from swiftspec_bench.hf_systems import rounds_from_forwards
from swiftspec_bench.plot import provenance
from swiftspec_core.decoders.base import DecodeResult
from swiftspec_core.errors import UserError

SIX = ["mt_bench", "humaneval", "gsm8k", "alpaca", "qa", "sum"]


# --- datasets -------------------------------------------------------------------------------------

def test_datasets_yaml_names_the_six():
    assert ds._YAML == ds.PACKAGE_CHECKOUT / "datasets.yaml"  # the checkout's top level (editable install)
    specs = ds.dataset_specs()
    assert list(specs) == SIX
    for name, spec in specs.items():
        assert spec["file"] == f"{name}.jsonl" and spec["hub"]
    assert specs["mt_bench"]["turns"] == 2


def test_parse_dataset_list(tmp_path):
    assert ds.parse_dataset_list("all") == [ds.Dataset(n) for n in SIX]
    assert ds.parse_dataset_list(" gsm8k, sum ,gsm8k") == [ds.Dataset("gsm8k"), ds.Dataset("sum")]
    with pytest.raises(UserError, match="unknown dataset 'nope'"):
        ds.parse_dataset_list("gsm8k,nope")
    mine = tmp_path / "spec_bench.jsonl"
    mine.write_text('{"question_id": 1, "turns": ["a", "b", "c"]}\n')
    assert ds.parse_dataset_list(f"{mine},qa") == [ds.Dataset("spec_bench", mine), ds.Dataset("qa")]
    [q] = ds.load_queries(ds.Dataset("spec_bench", mine), None, 5)
    assert q.dataset == "spec_bench" and q.turns == ("a", "b", "c")
    with pytest.raises(UserError, match="no such file"):
        ds.parse_dataset_list("qa,missing.jsonl")


def test_read_jsonl(tmp_path):
    f = tmp_path / "qa.jsonl"
    f.write_text('{"question_id": 7, "category": "qa", "turns": ["a?"]}\n\n'
                 '{"question_id": "x", "turns": ["b?", "c?"]}\n{"question_id": 9, "turns": ["d"]}\n')
    qs = ds.read_jsonl("qa", f, limit=2)
    assert [(q.question_id, q.turns) for q in qs] == [("7", ("a?",)), ("x", ("b?", "c?"))]
    f.write_text('{"turns": ["a"]}\n')
    with pytest.raises(UserError, match=r"qa.jsonl:1: malformed line \(missing field 'question_id'\)"):
        ds.read_jsonl("qa", f, limit=5)
    f.write_text('{"question_id": 7, "turns": ["a"]}\n{"question_id": "7", "turns": ["b"]}\n')
    with pytest.raises(UserError, match=r"qa.jsonl:2: question_id 7 appears twice"):
        ds.read_jsonl("qa", f, limit=5)
    f.write_text("\n\n")
    with pytest.raises(UserError, match=r"qa.jsonl holds no questions"):
        ds.read_jsonl("qa", f, limit=5)
    # A line past --limit is checked too: a later run with a larger limit would meet it mid-run.
    f.write_text('{"question_id": 1, "turns": ["a"]}\n{"question_id": 2, "turns": ["b"]}\n{"turns": ["c"]}\n')
    with pytest.raises(UserError, match=r"qa.jsonl:3: malformed line"):
        ds.read_jsonl("qa", f, limit=1)
    f.write_bytes(b'{"question_id": 1, "turns": ["a"]}\n\xff\n')
    with pytest.raises(UserError, match=r"qa.jsonl:2: not UTF-8"):
        ds.read_jsonl("qa", f, limit=1)


def test_no_local_copy_and_no_hub_is_a_user_error(monkeypatch, tmp_path):
    monkeypatch.setattr(ds, "DATA_DIR_CANDIDATES", (tmp_path / "nowhere",))
    assert ds.resolve_data_dir(None) is None
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="no local copy of gsm8k"):
        ds.load_queries(ds.Dataset("gsm8k"), None, 1)


def test_hub_rows_become_the_same_prompts():
    src = {s["path"]: s for spec in ds.dataset_specs().values() for s in spec["hub"]}
    q = ds._query_from_hub_row("alpaca", src["tatsu-lab/alpaca"], 3, {"instruction": "Rate it.", "input": "Movie: X"})
    assert q.turns == ("Rate it.\n\nMovie: X",) and q.question_id == "3"
    q = ds._query_from_hub_row("alpaca", src["tatsu-lab/alpaca"], 0, {"instruction": "Say hi.", "input": ""})
    assert q.turns == ("Say hi.",)
    q = ds._query_from_hub_row("qa", src["google-research-datasets/nq_open"], 0, {"question": "who played anna"})
    assert q.turns == ("Who played anna?",)
    q = ds._query_from_hub_row("humaneval", src["openai/openai_humaneval"], 0,
                               {"task_id": "HumanEval/0", "prompt": "def f():\n"})
    assert q.turns == ("Complete the code I provided.\ndef f():\n",) and q.question_id == "HumanEval/0"
    q = ds._query_from_hub_row("sum", src["abisee/cnn_dailymail"], 0, {"article": "Text."})
    assert q.turns == ("Summarize: Text.",)
    q = ds._query_from_hub_row("mt_bench", src["philschmid/mt-bench"], 0,
                               {"question_id": 81, "category": "writing", "turns": ["a", "b"]})
    assert q.turns == ("a", "b") and q.category == "writing"


def test_chat_prompt_ids_use_the_template_and_earlier_answers():
    from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

    tok = tiny_tokenizer()
    one = ds.chat_prompt_ids(tok, ["Hi"], [])
    assert tok.decode(one) == "<|bos|><|user|>Hi<|end|><|assistant|>"
    two = ds.chat_prompt_ids(tok, ["Hi", "Again"], ["Hello!"])
    assert tok.decode(two) == "<|bos|><|user|>Hi<|end|><|assistant|>Hello!<|end|><|user|>Again<|end|><|assistant|>"
    tok.chat_template = None
    with pytest.raises(UserError, match="no chat template"):
        ds.chat_prompt_ids(tok, ["Hi"], [])


# --- results --------------------------------------------------------------------------------------

def make_row(system="ar", qid="0", turn=1, sha="a" * 64, tps=10.0, accepted=(2, 3), dataset="gsm8k", **over):
    res = DecodeResult(tokens=[1] * (1 + sum(accepted)), accepted=list(accepted),
                       target_s=[0.1] * len(accepted), draft_s=[0.0] * len(accepted))
    n = len(res.tokens)
    row = results.row_from_result(res, n / tps, output_text="x", system=system, target="t", draft="d",
                                  dataset=dataset, question_id=qid, turn=turn, category="", prompt_tokens=5,
                                  max_new_tokens=8, device="cpu", gpus=0, weights="real", acceptance="real",
                                  kernels="torch", bandwidth_tb_s=None, target_floor_ms=None, draft_floor_ms=None,
                                  tree_bs=8, tree_w=8, chain_k=7, dtype="float32", seed=0,
                                  commit="unknown", started_at="now")
    row["output_sha"] = sha
    row = row | over
    for column in results.COLUMNS:  # columns this test does not care about
        row.setdefault(column, None)
    return row


def test_results_table_appends_and_reloads(tmp_path):
    table = results.ResultsTable(tmp_path / "run")
    assert table.rows == [] and not (tmp_path / "run").exists()
    table.append(make_row("ar"))
    table.append(make_row("chain", accepted=()))
    again = results.ResultsTable(tmp_path / "run")
    assert len(again.rows) == 2 and again.is_done(("ar", "t", "d", "gsm8k", "0", 1))
    assert again.rows[0]["accepted_lengths"] == [2, 3] and again.rows[1]["accepted_lengths"] == []
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["results.csv", "results.parquet"]
    csv = pd.read_csv(tmp_path / "run" / "results.csv")
    assert csv.accepted_lengths.tolist() == ["[2, 3]", "[]"]
    with pytest.raises(UserError, match="max_new_tokens=8"):
        again.check_settings({"max_new_tokens": 16})
    with pytest.raises(UserError, match="seed=0"):
        again.check_settings({"max_new_tokens": 8, "seed": 1})
    with pytest.raises(UserError, match="replay_source=None"):
        again.check_settings({"replay_source": "ab12"})
    again.check_settings({"max_new_tokens": 8, "seed": 0, "dtype": "float32"})


def test_a_csv_that_is_not_a_results_table_is_a_user_error(tmp_path):
    path = tmp_path / "results.csv"
    for text in ("", '"system","latency_s"\n"ar",0.5,7\n', '"system","latency_s"\n"ar",fast\n',
                 '"system","accepted_lengths"\n"ar","[1, 2"\n', b"\xff\xfe".decode("latin-1")):
        path.write_text(text, encoding="latin-1" if text.startswith("\xff") else "utf-8")
        with pytest.raises(UserError, match="is not a results.csv"):
            results.read_csv(path)
    path.write_text('"system","turn","latency_s","accepted_lengths","mine"\n"ar",12.0,0.031434756999999536,"[1, 2]","x"\n'
                    '"b\x00c",,,"",""\n')
    got = results.read_csv(path)  # a gap in a whole-number column reads as floats, as pandas would
    assert list(got.columns) == ["system", "turn", "latency_s", "accepted_lengths", "mine"]
    assert list(got["system"]) == ["ar", "b\x00c"] and got["latency_s"][0] == 0.031434756999999536
    assert got["turn"][0] == 12.0 and math.isnan(got["turn"][1]) and math.isnan(got["latency_s"][1])
    assert list(got["accepted_lengths"]) == [[1, 2], None] and list(got["mine"]) == ["x", ""]


def test_rows_from_before_the_quant_column_ran_unquantized(tmp_path):
    results.ResultsTable(tmp_path).append(make_row("ar", quant=None))  # written before `quant` existed
    again = results.ResultsTable(tmp_path)
    assert again.rows[0]["quant"] == "none"
    again.check_settings({"quant": "none"})
    with pytest.raises(UserError, match="quant=none"):
        again.check_settings({"quant": "awq"})


def test_a_write_that_dies_leaves_the_old_file(tmp_path, monkeypatch):
    table = results.ResultsTable(tmp_path)
    table.append(make_row("ar"))
    before = (tmp_path / "results.parquet").read_bytes()

    def dying_write(table, f):
        f.write(b"half a parquet")
        raise KeyboardInterrupt

    monkeypatch.setattr(results.pq, "write_table", dying_write)
    with pytest.raises(KeyboardInterrupt):
        table.append(make_row("chain"))
    assert (tmp_path / "results.parquet").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.csv", "results.parquet"]


def test_output_sha_is_of_the_token_ids():
    import hashlib

    assert results.output_sha([1, 2, 3]) == hashlib.sha256(b"1,2,3").hexdigest()


# --- compare --------------------------------------------------------------------------------------

def frame_of(*rows):
    return pd.DataFrame(list(rows))


def test_summary_numbers_and_speedup():
    frame = frame_of(make_row("ar", "0", tps=10), make_row("ar", "1", tps=20),
                     make_row("swiftspec", "0", tps=30, accepted=(4, 4)), make_row("swiftspec", "1", tps=50))
    s = compare.summarize(frame).set_index(["dataset", "system"])
    assert s.attrs["baseline"] == "ar"
    assert s.loc[("gsm8k", "ar"), "mean_tok_s"] == pytest.approx(15)
    assert s.loc[("gsm8k", "swiftspec"), "speedup"] == pytest.approx(40 / 15)
    assert s.loc[("gsm8k", "swiftspec"), "mean_accepted"] == pytest.approx((8 + 5) / 4)
    assert s.loc[("overall", "ar"), "queries"] == 2
    assert s.loc[("gsm8k", "ar"), "p95_ms_per_token"] == pytest.approx(1e3 / 10 - 0.05 * (1e3 / 10 - 1e3 / 20))
    assert compare.pick_baseline(frame_of(make_row("hf-ar"), make_row("chain")), None) == "hf-ar"
    assert compare.pick_baseline(frame_of(make_row("tree"), make_row("chain")), None) == "tree"
    with pytest.raises(UserError, match="--baseline medusa"):
        compare.pick_baseline(frame, "medusa")
    assert math.isnan(compare.summarize(frame_of(make_row("ar", accepted=()))).mean_accepted[0])


def test_round_time_leaves_out_the_prefill_where_rows_time_it():
    timed = make_row("ar", "0", tps=6 / 0.6, prefill_s=0.2)  # 6 tokens in 0.6 s, 2 rounds
    s = compare.summarize(frame_of(timed)).iloc[0]
    assert s.round_ms == pytest.approx((0.6 - 0.2) / 2 * 1e3) and s.prefill_ms == pytest.approx(200)
    old = compare.summarize(frame_of(timed).drop(columns="prefill_s")).iloc[0]  # rows from before the column
    assert old.round_ms == pytest.approx(0.6 / 2 * 1e3) and math.isnan(old.prefill_ms)


def test_two_drafts_of_one_target_are_summarized_apart():
    frame = frame_of(make_row("ar", tps=10, draft="small"), make_row("tree", tps=40, draft="small"),
                     make_row("ar", tps=10, draft="big"), make_row("tree", tps=20, draft="big"))
    s = compare.summarize(frame).set_index(["draft", "dataset", "system"])
    assert s.loc[("small", "gsm8k", "tree"), "speedup"] == pytest.approx(4)
    assert s.loc[("big", "gsm8k", "tree"), "speedup"] == pytest.approx(2)
    assert s.loc[("big", "overall", "tree"), "queries"] == 1


def test_the_cpu_lockstep_note():
    assert "correctness run" in compare.lockstep_note(frame_of(make_row("ar"), make_row("swiftspec:d2")))
    assert compare.lockstep_note(frame_of(make_row("ar"), make_row("swiftspec@1+1"))) is None
    assert compare.lockstep_note(frame_of(make_row("swiftspec", device="cuda"))) is None


# --- peers and figures ----------------------------------------------------------------------------

def test_rounds_from_forwards():
    # prompt of 5; forward 0 (prefill + 4 draft tokens) emits 3; forward 1 starts at position 7 and
    # emits 2; forward 2 starts at 9 and emits the last 2 of 7 tokens
    rec = SimpleNamespace(starts=[0, 7, 9], began=[1.0, 3.0, 6.0], ended=[2.0, 4.0, 8.0])
    res = DecodeResult(tokens=[0] * 7)
    rounds_from_forwards(rec, 5, 7, 0.5, res)
    assert res.accepted == [2, 2, 2] and res.target_s == [1.0, 1.0, 2.0] and res.draft_s == [0.5, 1.0, 2.0]
    # plain decoding: the prefill emits one token, every later forward one more
    rec = SimpleNamespace(starts=[0, 5, 6, 7], began=[0.0] * 4, ended=[0.0] * 4)
    res = DecodeResult(tokens=[0] * 4)
    rounds_from_forwards(rec, 5, 4, 0.0, res)
    assert res.accepted == [1, 1, 1]


def test_titles_say_when_acceptance_is_replayed():
    frame = frame_of(make_row("ar"), make_row("swiftspec", acceptance="replayed", weights="random"))
    assert "acceptance replayed" in provenance(frame) and "weights real+random" in provenance(frame)
    assert provenance(frame_of(make_row("ar"))) == "device cpu, weights real, acceptance real"



def test_figures_draw_each_target_and_draft_apart(tmp_path):
    from swiftspec_bench import plot

    frame = frame_of(make_row("ar", draft="small"), make_row("tree", draft="small"), make_row("ar", draft="big"))
    panels = []
    written = plot._per_pair(frame, lambda ax, rows: panels.append(sorted(set(rows.draft))), "t", "y", tmp_path, "x")
    assert panels == [["small"], ["big"]] and [p.name for p in written] == ["x.png", "x.pdf"]


def test_speed_by_target_gpus_draws_only_several_splits(tmp_path):
    """Fig. 9's data: swiftspec's mean speed per target group size, the other systems beside it;
    no figure where no pair ran two splits."""
    from swiftspec_bench.plot import by_target_gpus, speed_by_target_gpus

    rows = [("swiftspec@4+4:fused", 300.0), ("swiftspec@4+4:fused", 320.0), ("swiftspec@6+2:fused", 280.0),
            ("swiftspec@2+6:fused", 200.0), ("tree@tp8:fused", 250.0), ("tree@tp8:fused", 230.0)]
    frame = pd.DataFrame([{"target": "t", "draft": "d", "dataset": "qa", "system": s, "tokens_per_s": v,
                           "device": "cuda", "weights": "random", "acceptance": "replayed"} for s, v in rows])
    table, others = by_target_gpus(frame)
    assert table.index.tolist() == [2.0, 4.0, 6.0] and table.columns.tolist() == ["swiftspec:fused"]
    assert table["swiftspec:fused"].tolist() == [200.0, 310.0, 280.0]
    assert others.to_dict() == {"tree@tp8:fused": 240.0}
    assert [p.name for p in speed_by_target_gpus(frame, tmp_path)] == ["speed_by_target_gpus.png",
                                                                        "speed_by_target_gpus.pdf"]
    one_split = frame[~frame.system.isin(["swiftspec@6+2:fused", "swiftspec@2+6:fused"])]
    assert speed_by_target_gpus(one_split, tmp_path / "one") == []


def test_best_split_is_the_fastest_over_the_queries_every_split_ran():
    from swiftspec_bench.placement import best_split

    def row(system, q, speed):
        return {"system": system, "dataset": "qa", "question_id": q, "turn": 1, "tokens_per_s": speed}
    rows = [row("swiftspec@4+4:fused", 1, 300.0), row("swiftspec@4+4:fused", 2, 100.0),
            row("swiftspec@6+2:fused", 1, 250.0), row("swiftspec@6+2:fused", 2, 160.0),
            row("swiftspec@6+2:fused", 3, 900.0),  # only 6+2 ran query 3: not counted
            row("tree@tp8:fused", 1, 999.0)]
    assert best_split(pd.DataFrame(rows)) == (6, 2)  # 205 against 200 a query
    tie = [row("swiftspec@4+4", 1, 200.0), row("swiftspec@6+2", 1, 200.0)]
    assert best_split(pd.DataFrame(tie)) == (6, 2)
    with pytest.raises(ValueError, match="no swiftspec rows"):
        best_split(pd.DataFrame([row("tree@tp8", 1, 1.0)]))
    with pytest.raises(ValueError, match="no query ran at every split"):
        best_split(pd.DataFrame([row("swiftspec@4+4", 1, 1.0), row("swiftspec@6+2", 2, 1.0)]))


def test_labels_say_which_kernels_each_systems_engines_ran():
    from swiftspec_bench.systems import label, target_kernels

    assert [label(s, 1, None, kernels="persistent") for s in ("ar", "tree", "chain")] == \
        ["ar:fused", "tree:persistent", "chain:persistent"]
    assert label("swiftspec", 1, (1, 1), 3, "ngram", "persistent") == "swiftspec@1+1:d3:graft:persistent"
    assert [label(s, 2, None, kernels="fused") for s in ("ar", "hf-ar")] == ["ar@tp2:fused", "hf-ar"]
    # A target the persistent kernel takes runs it on one GPU: ar's label says so; the row's
    # target_kernels say it for every system (tree@tp2's target and swiftspec@2+1's stay fused)
    assert [label("ar", tp, None, kernels="persistent", persistent_target=True) for tp in (1, 2)] == \
        ["ar:persistent", "ar@tp2:fused"]
    assert [target_kernels(s, "persistent", tp, split, True) for s, tp, split in (
        ("tree", 1, None), ("tree", 2, None), ("swiftspec", 2, (1, 1)), ("swiftspec", 1, (2, 1)),
        ("swiftspec", 2, None))] == ["persistent", "fused", "persistent", "fused", "persistent"]
    assert [target_kernels("ar", k, 1, None, True) for k in ("torch", "fused")] == ["torch", "fused"]
