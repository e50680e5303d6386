"""A random-weight AWQ engine drawn layer by layer (models/random_parts.py): bit for bit the engine
the plain way builds (the whole transformers model, then quantized) at TP 1 and TP 2; the hf-*
peers refused up front; a CLI run on it in process, over TP 2 and split 1+1, lossless."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.distributed as dist
from typer.testing import CliRunner

from swiftspec_bench.cli import app
from swiftspec_core.models import loading
from swiftspec_core.models.loading import engine_of, load_engine, load_model
from swiftspec_core.models.weights import engine_from_hf
from swiftspec_core.runtime.launch import run_workers

DATA_DIR = Path(__file__).with_name("fixtures")


@pytest.fixture(scope="module")
def tp_folders(tmp_path_factory) -> dict[str, str]:
    """Model folders (config.json, the tiny byte tokenizer) of the tiny presets' shapes with an ffn of
    96: AWQ groups of 32, so TP 2 holds whole groups (the presets' own 64-wide groups do not split
    into 2 ranks' 32 columns of wo). --weights random draws them; no weight file exists."""
    from swiftspec_core.models.presets import PRESETS
    from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer

    folders = {}
    for spec in ("tiny-llama", "tiny-qwen2"):
        folder = tmp_path_factory.mktemp(spec)
        config = PRESETS[spec].hf_config()
        config.intermediate_size = 96
        config.save_pretrained(folder)
        tiny_tokenizer().save_pretrained(folder)
        folders[spec] = str(folder)
    return folders


def plain_way(spec: str, dtype: torch.dtype, seed: int, group=None, quant: str = "awq"):
    """The engine as built before random_parts.py: the whole transformers model, then quantized."""
    loaded = load_model(spec, weights="random", dtype=dtype, seed=seed)
    assert loaded.hf is not None
    return engine_from_hf(loaded.hf, quant=quant, dtype=dtype, group=group, max_seq_len=64)


def mismatches(a: torch.nn.Module, b: torch.nn.Module) -> list[str]:
    sa, sb = a.state_dict(), b.state_dict()
    if sa.keys() != sb.keys():
        return sorted(sa.keys() ^ sb.keys())
    return [k for k in sa if sa[k].dtype != sb[k].dtype or not torch.equal(sa[k], sb[k])]


@pytest.mark.parametrize("spec,dtype", [("tiny-llama", torch.float32), ("tiny-qwen2", torch.bfloat16)])
def test_layer_by_layer_equals_the_plain_way(spec, dtype):
    loaded = load_model(spec, weights="random", dtype=dtype, seed=5, quant="awq")
    assert loaded.hf is None and loaded.parts is not None  # no transformers model was built
    engine = engine_of(loaded, quant="awq", dtype=dtype, max_seq_len=64)
    assert engine.args.quant == "awq"
    assert mismatches(engine, plain_way(spec, dtype, seed=5)) == []
    assert mismatches(engine, plain_way(spec, dtype, seed=6)) != []  # the comparison can fail
    with pytest.raises(ValueError, match="loaded for an engine of quant 'awq'"):
        engine_of(loaded, quant="none", dtype=dtype)


def _tp_worker(rank, world_size, ctx):
    """What a TP worker builds (service._engines -> load_engine) against the plain way's shard, with
    no transformers model built on the way (a rank's memory: its shard and one part)."""
    specs, dtype, quant = ctx.args
    report = []
    for spec in specs:
        random_model = loading._random_model
        loading._random_model = lambda *a: pytest.fail("a whole transformers model was built")
        try:
            new = load_engine(spec, weights="random", dtype=dtype, seed=3, group=ctx.group, max_seq_len=64, quant=quant)
        finally:
            loading._random_model = random_model
        bad = mismatches(new, plain_way(spec, dtype, seed=3, group=ctx.group, quant=quant))
        # A rank holds its vocabulary rows alone, not views into the full embedding and lm_head.
        views = [k for k, v in new.state_dict().items() if v.untyped_storage().nbytes() != v.nbytes]
        report.append((spec, rank, bad, views, new.args.n_heads))
    gathered = [None] * world_size if rank == 0 else None
    dist.gather_object(report, gathered, dst=0, group=ctx.world.pg)
    return [r for rank_report in gathered for r in rank_report] if rank == 0 else None


@pytest.mark.parametrize("quant", ["awq", "none"])
def test_tp2_layer_by_layer_equals_the_plain_way(tp_folders, quant):
    got = run_workers(_tp_worker, 2, (list(tp_folders.values()), torch.float32, quant), timeout=120)
    assert sorted((spec, rank) for spec, rank, *_ in got) == [(s, r) for s in sorted(tp_folders.values()) for r in (0, 1)]
    for spec, rank, bad, views, local_heads in got:
        assert bad == [] and views == [], (spec, rank, bad, views)
        assert local_heads == 2  # 4 q heads, 2 a rank


def _run(out: Path, *extra: str, model: str = "tiny-llama"):
    args = ["run", "--target", model, "--draft", model, "--datasets", "gsm8k", "--limit", "1",
            "--max-new-tokens", "12", "--data-dir", str(DATA_DIR), "--weights", "random", "--quant", "awq",
            "--device", "cpu", "--out", str(out), *extra]  # the CPU path, on a GPU machine too
    return CliRunner().invoke(app, args)


def test_hf_peers_refused_before_any_model(tmp_path, monkeypatch):
    monkeypatch.setattr(loading, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    for systems in ("hf-ar", "ar,hf-assisted"):
        res = _run(tmp_path / systems, "--systems", systems)
        assert res.exit_code == 2, (res.stdout, res.stderr, res.exception)
        assert res.stderr.startswith("error: --quant awq with random weights: hf-") and res.stderr.count("\n") == 1
        assert "drawn layer by layer" in res.stderr


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_twin_of_an_awq_target_holds_its_dequantized_weights(dtype):
    """Under --quant awq a draft of the target's random weights (draft_from_target, as a run's own
    process makes it) holds exactly what the AWQ engine computes with, and a worker's draft
    (load_engine with awq_twin, as service._engines loads it) the same bits."""
    from swiftspec_core.models.awq import dequantized_state
    from swiftspec_core.models.noise import draft_from_target

    target = load_model("tiny-llama", weights="random", dtype=dtype, seed=5, quant="awq")
    draft = load_model("tiny-llama", weights="random", dtype=dtype, seed=5)
    plain = {k: v.clone() for k, v in engine_of(draft, dtype=dtype, max_seq_len=64).state_dict().items()}
    draft_from_target(target, draft, 0.0, 5, "awq")
    twin = engine_of(draft, dtype=dtype, max_seq_len=64).state_dict()
    worker = load_engine("tiny-llama", weights="random", dtype=dtype, seed=5, max_seq_len=64, awq_twin=True)
    want = dequantized_state(engine_of(target, quant="awq", dtype=dtype, max_seq_len=64).state_dict(), dtype)
    assert twin.keys() == want.keys() == worker.state_dict().keys()
    assert [k for k in want if not torch.equal(twin[k], want[k])] == []
    assert mismatches(worker, engine_of(draft, dtype=dtype, max_seq_len=64)) == []
    changed = [k for k in plain if not torch.equal(plain[k], twin[k])]  # the comparison can fail
    assert changed and all(k.rsplit(".", 1)[-1] in ("wqkv", "wo", "w_gate_up", "w_down") for k in changed)


def test_a_perturbed_draft_of_a_random_awq_target(tmp_path):
    """--draft-noise with --quant awq: the draft is the AWQ target's dequantized twin plus noise (the
    target drawn layer by layer has a config without a dtype; the shapes still match)."""
    res = _run(tmp_path / "run", "--systems", "ar,tree", "--draft-noise", "0.01")
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    frame = pd.read_parquet(tmp_path / "run" / "results.parquet")
    assert set(frame.draft_noise) == {0.01} and set(frame.quant) == {"awq"}
    assert frame.output_sha.nunique() == 1


def test_cli_awq_rows_lossless_in_process_and_across_processes(tmp_path, monkeypatch, tp_folders):
    built = []  # configs of the transformers models this process builds
    random_model = loading._random_model
    monkeypatch.setattr(loading, "_random_model", lambda config, *a: built.append(config) or random_model(config, *a))
    out = tmp_path / "run"
    model = tp_folders["tiny-llama"]
    res = _run(out, "--systems", "ar", model=model)  # the target's engine built in this process
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert built == []  # ar needs no draft, and the target was drawn layer by layer
    res = _run(out, "--systems", "chain,tree,swiftspec", "--tp", "2", "--split", "1+1", "--draft-steps", "2",
               model=model)
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert len(built) == 1  # the draft, on the meta device (runner.parent_device); the target's shards were drawn in the workers
    frame = pd.read_parquet(out / "results.parquet")
    assert set(frame.system) == {"ar", "chain@tp2", "tree@tp2:graft", "swiftspec@1+1:d2:graft"}  # grafting by default
    # The workers' draft is the AWQ target's twin: a chain accepts all it drafts (chain_k 7) but
    # where the query's last round is cut short.
    for lengths in frame.loc[frame.system == "chain@tp2", "accepted_lengths"]:
        assert list(lengths[:-1]) == [8] * (len(lengths) - 1), lengths
    assert set(frame.quant) == {"awq"} and set(frame.weights) == {"random"}
    assert frame.output_sha.nunique() == 1  # both placements emit in-process ar's tokens
    res = CliRunner().invoke(app, ["compare", str(out)])
    assert res.exit_code == 0 and "lossless: yes" in res.stdout, res.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_layer_by_layer_equals_the_plain_way_in_less_memory():
    """On CUDA (its generator, its kernels) at a real shape: bit for bit the plain way's engine, and
    a peak of about the engine plus one layer's working set instead of the whole model in bf16."""
    spec, dtype = "llama-3.2-1b", torch.bfloat16
    peaks, engines = {}, {}
    for way in ("layer_by_layer", "plain"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        if way == "plain":
            loaded = load_model(spec, weights="random", dtype=dtype, device="cuda", seed=0)
        else:
            loaded = load_model(spec, weights="random", dtype=dtype, device="cuda", seed=0, quant="awq")
        engines[way] = engine_of(loaded, quant="awq", dtype=dtype, device="cuda", max_seq_len=64)
        peaks[way] = (torch.cuda.max_memory_allocated() - start) / 2**30
        del loaded
    engine_gib = sum(v.numel() * v.element_size() for v in engines["layer_by_layer"].state_dict().values()) / 2**30
    print(f"{spec} AWQ engine {engine_gib:.2f} GiB; build peak: layer by layer {peaks['layer_by_layer']:.2f} GiB, "
          f"plain {peaks['plain']:.2f} GiB")
    assert mismatches(engines["layer_by_layer"], engines["plain"]) == []
    assert peaks["layer_by_layer"] < peaks["plain"]
