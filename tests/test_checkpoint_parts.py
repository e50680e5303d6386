"""A real checkpoint's engine read part by part from its safetensors or .bin files
(models/checkpoint_parts.py): bit for bit the engine the whole way builds (the transformers model
or the AWQ tensors loaded whole, then sharded) for every rank of TP 1, 2 and 3, from one file or an
index of shards; an AWQ checkpoint without its dequantized twin; a rank's peak memory its shard and
a part, not the model; a CLI run over TP 2 lossless. A damaged checkpoint: test_checkpoint_checks.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from swiftspec_bench.cli import app
from swiftspec_core.errors import UserError
from swiftspec_core.models import loading
from swiftspec_core.models.loading import engine_of, load_engine, load_model
from swiftspec_core.models.presets import PRESETS
from swiftspec_core.models.tiny_tokenizer import tiny_tokenizer
from swiftspec_core.models.weights import build_engine, engine_from_hf

DATA_DIR = Path(__file__).with_name("fixtures")


class StandInGroup:
    """A rank of a TP group, for building its shard; no forward runs on it."""

    def __init__(self, rank: int, size: int):
        self.rank, self.size = rank, size

    def all_reduce(self, x):
        raise AssertionError("no forward runs here")

    all_gather = all_reduce


def groups():
    return [None] + [StandInGroup(r, n) for n in (2, 3) for r in range(n)]


def mismatches(a: torch.nn.Module, b: torch.nn.Module) -> list[str]:
    sa, sb = a.state_dict(), b.state_dict()
    if sa.keys() != sb.keys():
        return sorted(sa.keys() ^ sb.keys())
    return [k for k in sa if sa[k].dtype != sb[k].dtype or not torch.equal(sa[k], sb[k])]


def save_checkpoint(folder: Path, spec: str, seed: int, shard_size: str | None = None,
                    bin_files: bool = False) -> Path:
    """A real-weight model folder of a tiny preset's shape (an ffn of 96: whole AWQ groups of 32 at TP
    2), one model.safetensors or shards with their index (shard_size); .bin files where `bin_files`."""
    config = PRESETS[spec].hf_config()
    config.intermediate_size = 96
    hf = loading._random_model(config, torch.float32, torch.device("cpu"), seed)
    hf.save_pretrained(folder, **({"max_shard_size": shard_size} if shard_size else {}))
    tiny_tokenizer().save_pretrained(folder)
    return as_bin(folder) if bin_files else folder


def as_bin(folder: Path) -> Path:
    """The folder's safetensors made what transformers 4's save_pretrained(safe_serialization=False)
    wrote (transformers 5 writes safetensors alone): pytorch_model.bin, or pytorch_model-00001-of-
    0000N.bin shards named by pytorch_model.bin.index.json, each torch.save's zip of a state dict."""
    from safetensors.torch import load_file

    renamed = {}
    for file in sorted(folder.glob("*.safetensors")):
        renamed[file.name] = "pytorch_" + file.name.replace(".safetensors", ".bin")
        torch.save(load_file(str(file)), folder / renamed[file.name])
        file.unlink()
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        layout = json.loads(index.read_text())
        layout["weight_map"] = {name: renamed[file] for name, file in layout["weight_map"].items()}
        (folder / "pytorch_model.bin.index.json").write_text(json.dumps(layout))
        index.unlink()
    return folder


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    """Each as safetensors and as .bin files ("-bin")."""
    return {name + bin_files * "-bin": save_checkpoint(tmp_path_factory.mktemp(name), spec, seed, shard, bin_files)
            for name, spec, seed, shard in (("llama", "tiny-llama", 1, None),
                                            ("qwen2-sharded", "tiny-qwen2", 2, "200KB"))
            for bin_files in (False, True)}


@pytest.mark.parametrize("name,dtype,quant", [("llama", torch.float32, "none"), ("qwen2-sharded", torch.bfloat16, "none"),
                                              ("llama", torch.float32, "awq"), ("llama-bin", torch.float32, "none"),
                                              ("qwen2-sharded-bin", torch.bfloat16, "none"),
                                              ("qwen2-sharded-bin", torch.float32, "awq")])
def test_every_rank_reads_what_the_whole_way_builds(checkpoints, name, dtype, quant):
    """Safetensors or .bin (transformers' from_pretrained reads those whole), one file or shards."""
    folder = str(checkpoints[name])
    index = "pytorch_model.bin.index.json" if name.endswith("-bin") else "model.safetensors.index.json"
    assert (checkpoints[name] / index).is_file() == name.startswith("qwen2-sharded")
    assert not (name.endswith("-bin") and list(checkpoints[name].glob("*.safetensors")))
    whole = load_model(folder, dtype=dtype)
    assert whole.parts is None and not next(whole.hf.parameters()).is_meta
    for group in groups():
        built = []  # a transformers model this process builds (none but the meta one of the shapes)
        random_model = loading._random_model
        loading._random_model = lambda config, dt, device, seed: built.append(device) or random_model(config, dt, device,
                                                                                                  seed)
        try:
            new = load_engine(folder, weights="real", dtype=dtype, group=group, max_seq_len=64, quant=quant)
        finally:
            loading._random_model = random_model
        assert built == [torch.device("meta")], built
        want = engine_from_hf(whole.hf, dtype=dtype, group=group, max_seq_len=64, quant=quant)
        assert mismatches(new, want) == [], group and (group.rank, group.size)
        if group is not None:  # a rank holds its own tensors, not views into whole ones
            views = [k for k, v in new.state_dict().items() if v.untyped_storage().nbytes() != v.nbytes]
            assert views == []
    other = load_engine(folder, weights="real", dtype=dtype, group=StandInGroup(1, 2), max_seq_len=64, quant=quant)
    assert mismatches(other, load_engine(folder, weights="real", dtype=dtype, group=StandInGroup(0, 2),
                                         max_seq_len=64, quant=quant)) != []  # the comparison can fail


def awq_checkpoint(folder: Path) -> Path:
    """An AutoAWQ-layout checkpoint folder (tests/test_awq.py's hub_tensors) of 2 layers, group 128."""
    folder.mkdir(exist_ok=True)
    from safetensors.torch import save_file
    from transformers import AutoConfig

    from tests.test_awq import awq_args, hub_tensors, quantized

    args, _, plain = quantized(awq_args(dim=128, ffn_dim=256, head_dim=32, vocab_size=264), dtype=torch.float32)
    save_file({k: v.contiguous() for k, v in hub_tensors(args, plain, 128).items()}, str(folder / "model.safetensors"))
    quant = dict(quant_method="awq", bits=4, group_size=128, version="GEMM", zero_point=True)
    cfg = AutoConfig.for_model("llama", hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                               num_attention_heads=4, num_key_value_heads=2, vocab_size=264,  # the byte tokenizer's 263
                               max_position_embeddings=2048, rms_norm_eps=1e-6, quantization_config=quant)
    (folder / "config.json").write_text(json.dumps(cfg.to_dict()))
    tiny_tokenizer().save_pretrained(folder)
    return folder


def test_an_awq_checkpoint_is_read_by_part_without_its_twin(tmp_path, monkeypatch):
    folder = str(awq_checkpoint(tmp_path))
    whole = load_model(folder)  # the packed state, and the twin the hf-* peers run
    assert whole.awq[1] and not next(whole.hf.parameters()).is_meta
    monkeypatch.setattr(loading, "_awq_pretrained", lambda *a: pytest.fail("the whole way, with its twin"))
    alone = load_model(folder, hf_twin=False)
    assert all(p.is_meta for p in alone.hf.parameters()) and alone.awq == (whole.awq[0], {})
    assert mismatches(engine_of(alone, quant="awq", dtype=torch.float32, max_seq_len=64),
                      engine_of(whole, quant="awq", dtype=torch.float32, max_seq_len=64)) == []
    with pytest.raises(UserError, match="--quant awq"):
        engine_of(alone, dtype=torch.float32)
    for n in (2, 4):  # TP 4: one q head a rank, o_proj's 32 columns a quarter of a group: refused
        for rank in range(n):
            group = StandInGroup(rank, n)
            try:
                want = build_engine(*whole.awq, dtype=torch.float32, group=group, max_seq_len=64)
            except ValueError as e:
                with pytest.raises(ValueError, match=str(e)[:40]):
                    load_engine(folder, weights="real", dtype=torch.float32, group=group, quant="awq")
                continue
            got = load_engine(folder, weights="real", dtype=torch.float32, group=group, max_seq_len=64, quant="awq")
            assert mismatches(got, want) == [], (rank, n)


_RANK_PEAK = """
import sys, torch
from swiftspec_core.models.loading import load_engine, load_model
from swiftspec_core.models.weights import engine_from_hf

class Rank:
    rank, size = 0, 2

def rss_kb(field="VmRSS"):
    return int(open("/proc/self/status").read().split(field + ":")[1].split()[0])

load_model(sys.argv[1], device="meta")  # the imports, the tokenizer, a meta model: not the weights
before = rss_kb()
if sys.argv[2] == "whole":
    engine = engine_from_hf(load_model(sys.argv[1]).hf, dtype=torch.float32, group=Rank(), max_seq_len=64)
else:
    engine = load_engine(sys.argv[1], weights="real", dtype=torch.float32, group=Rank(), max_seq_len=64)
print(before, rss_kb("VmHWM"), sum(t.nbytes for t in engine.state_dict().values()) >> 10)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
@pytest.mark.parametrize("bin_files", [False, True])
def test_a_rank_peaks_at_its_shard_and_a_part(tmp_path, bin_files):
    """A TP 2 rank of a ~135 MB checkpoint (8 layers of 17 MB; one model.safetensors or one
    pytorch_model.bin, whose check maps it and reads no weight) keeps its ~68 MB shard. Read part by
    part it peaks at that plus a part read and its copy (~26 MB here); the whole way held the whole
    model beside it (~+206 MB: measured too, so the bound can fail).
    The ranks run with glibc's mmap threshold fixed: left dynamic, it rises after the first large free,
    later parts come from the heap and stay mapped, and the same run peaked 97-115 MB above its
    baseline from run to run (once 123 MB, over this bound, in CI); fixed, 94.0-94.1 MB in 8 of 8."""
    from transformers import AutoConfig

    config = AutoConfig.for_model("llama", hidden_size=512, intermediate_size=2048, num_hidden_layers=8,
                                  num_attention_heads=8, num_key_value_heads=8, vocab_size=1024)
    hf = loading._random_model(config, torch.float32, torch.device("cpu"), seed=0)
    weight_kb = sum(p.numel() * p.element_size() for p in hf.parameters()) >> 10
    hf.save_pretrained(tmp_path)
    tiny_tokenizer().save_pretrained(tmp_path)
    if bin_files:
        as_bin(tmp_path)
    del hf
    growth = {}
    for way in ("parts", "whole"):
        out = subprocess.run([sys.executable, "-c", _RANK_PEAK, str(tmp_path), way], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parents[1], check=True,
                             env={**os.environ, "MALLOC_MMAP_THRESHOLD_": str(128 << 10)}).stdout
        before, peak, shard_kb = map(int, out.split()[-3:])
        growth[way] = peak - before
    assert shard_kb < weight_kb * 0.55
    bound = shard_kb + weight_kb * 0.3
    assert growth["parts"] < bound < growth["whole"], (growth, shard_kb, weight_kb)


def test_cli_real_checkpoint_over_tp2_is_lossless(tmp_path, checkpoints):
    """A user's model folder (real weights) as target and draft: ar in process, chain and tree over
    two TP ranks that each read their shard, all emitting ar's tokens."""
    folder = str(checkpoints["llama"])
    out = tmp_path / "run"
    base = ["run", "--target", folder, "--draft", folder, "--datasets", "gsm8k", "--limit", "1",
            "--max-new-tokens", "12", "--data-dir", str(DATA_DIR), "--device", "cpu", "--out", str(out)]
    for extra in (["--systems", "ar"], ["--systems", "chain,tree", "--tp", "2"]):
        res = CliRunner().invoke(app, base + extra)
        assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    frame = pd.read_parquet(out / "results.parquet")
    assert set(frame.system) == {"ar", "chain@tp2", "tree@tp2:graft"} and set(frame.weights) == {"real"}
    assert frame.output_sha.nunique() == 1


def test_cli_awq_checkpoint_in_process_makes_its_twin_for_the_hf_peers_alone(tmp_path, monkeypatch):
    """On one process an AWQ checkpoint's engine is read part by part unless an hf-* peer runs its
    dequantized twin (for Llama-3-70B: 140 GB in bf16 beside the 40 GB engine, on one H200)."""
    folder = str(awq_checkpoint(tmp_path / "model"))
    twins = []  # the loads that made the twin (the whole way)
    whole_way = loading._awq_pretrained
    monkeypatch.setattr(loading, "_awq_pretrained", lambda spec, *a: twins.append(spec) or whole_way(spec, *a))
    base = ["run", "--target", folder, "--datasets", "gsm8k", "--limit", "1", "--max-new-tokens", "6",
            "--data-dir", str(DATA_DIR), "--device", "cpu", "--quant", "awq"]
    res = CliRunner().invoke(app, base + ["--systems", "ar", "--out", str(tmp_path / "ar")])
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert twins == []
    res = CliRunner().invoke(app, base + ["--systems", "ar,hf-ar", "--out", str(tmp_path / "peers")])
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert twins == [folder]
    rows = [pd.read_parquet(tmp_path / out / "results.parquet") for out in ("ar", "peers")]
    assert set(rows[1].system) == {"ar", "hf-ar"} and set(rows[0].weights) == {"real"}
    assert rows[0].output_sha.iloc[0] == rows[1].set_index("system").output_sha["ar"]  # one engine either way


@pytest.mark.parametrize("spec,awq", [("tiny-llama", False), ("tiny-qwen2", True)])
def test_a_written_random_checkpoint_reads_as_the_random_model(tmp_path, spec, awq):
    """swiftspec_bench.random_checkpoint (the GPU machine's stand-in for a real 70B folder): read
    as real weights, its engine is the one `--weights random` (with --quant awq: its round-to-nearest
    engine) builds at that seed, bit for bit."""
    from swiftspec_bench.random_checkpoint import DTYPE, main

    assert main([spec, str(tmp_path), "--seed", "4", "--device", "cpu"] + (["--awq"] if awq else [])) == 0
    assert len(list(tmp_path.glob("model-*.safetensors"))) == PRESETS[spec].hf_config().num_hidden_layers + 2
    quant = "awq" if awq else "none"
    real = load_model(str(tmp_path), dtype=DTYPE, by_part=True)
    assert (real.awq is not None) == awq and real.weights == "real"
    got = engine_of(real, quant=quant, dtype=DTYPE, max_seq_len=64)
    assert got.args.quant == quant
    random = load_model(spec, weights="random", dtype=DTYPE, seed=4, quant=quant)
    assert mismatches(got, engine_of(random, quant=quant, dtype=DTYPE, max_seq_len=64)) == []
    other = load_model(spec, weights="random", dtype=DTYPE, seed=5, quant=quant)
    assert mismatches(got, engine_of(other, quant=quant, dtype=DTYPE, max_seq_len=64)) != []
    assert main(["no-such-preset", str(tmp_path / "x")]) == 2


def test_a_load_that_cannot_fit_its_gpu_is_refused_before_any_weight_is_placed(tmp_path, monkeypatch):
    """A whole model, an AWQ checkpoint with its twin, or a rank's engine whose weights alone exceed
    the GPU's free memory: a UserError at once (torch would run out of memory minutes later). The
    GPU is a stand-in here: 139 GB free of 143."""
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (139_000_000_000, 143_000_000_000))
    shapes = loading._random_model  # the meta device's model of a folder's shapes alone is built

    def random_model(config, dtype, device, seed):
        assert torch.device(device).type == "meta", "a model was built"
        return shapes(config, dtype, device, seed)

    monkeypatch.setattr(loading, "_random_model", random_model)
    with pytest.raises(UserError, match=r"^llama-3-70b in bfloat16 needs at least 141\.\d GB on cuda, which has "
                                        r"139\.0 GB free of 143\.0 GB \(--tp and --split"):
        load_model("llama-3-70b", weights="random", dtype=torch.bfloat16, device="cuda")
    folder = str(awq_checkpoint(tmp_path / "model"))
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (50_000, 143_000_000_000))
    with pytest.raises(UserError, match="AWQ tensors and their dequantized twin in bfloat16"):
        load_model(folder, dtype=torch.bfloat16, device="cuda")
    loaded = load_model(folder, dtype=torch.bfloat16, device="cuda", by_part=True)  # nothing placed yet
    with pytest.raises(UserError, match=r"engine \(a rank's share of 2\) needs at least 0\.0 GB on cuda"):
        engine_of(loaded, quant="awq", dtype=torch.bfloat16, device="cuda", group=StandInGroup(0, 2))


def test_no_hub_layout_outlives_its_tiling_while_an_engine_is_built(tmp_path, monkeypatch):
    """An engine built part by part (drawn, or read) hands its state over whole: when use_kernels
    tiles the AWQ layers for the fused kernels, nothing else holds the hub's layout, which goes
    layer by layer (the GPU held both at once: 75 GB at the peak for the 70B's 40, session 40)."""
    import gc
    import weakref

    from swiftspec_core.models.transformer import AWQLinear, Transformer

    freed = []

    def use_kernels(self, kernels):  # what "fused" does to the AWQ layers, on the CPU
        hub = weakref.ref(self.layers[0].w_down.qweight)
        for module in self.modules():
            if isinstance(module, AWQLinear):
                module.tile_()
        gc.collect()
        freed.append(hub() is None)

    monkeypatch.setattr(Transformer, "use_kernels", use_kernels)
    load_engine("tiny-llama", weights="random", dtype=torch.float32, max_seq_len=64, quant="awq")
    load_engine(str(awq_checkpoint(tmp_path / "model")), weights="real", dtype=torch.float32, max_seq_len=64,
                quant="awq")
    assert freed == [True, True]


def test_an_awq_checkpoint_is_refused_as_a_draft_or_without_quant_awq_before_loading(tmp_path, monkeypatch):
    folder = str(awq_checkpoint(tmp_path / "model"))
    monkeypatch.setattr(loading, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    base = ["run", "--datasets", "gsm8k", "--limit", "1", "--max-new-tokens", "4", "--data-dir", str(DATA_DIR),
            "--device", "cpu", "--out", str(tmp_path / "out")]
    for extra in (["--target", folder, "--systems", "ar"],
                  ["--target", folder, "--draft", folder, "--systems", "chain", "--quant", "awq"]):
        res = CliRunner().invoke(app, base + extra)
        assert res.exit_code == 2 and res.stderr.count("\n") == 1, (res.stdout, res.stderr)
        assert "is an AWQ checkpoint: it runs as the target, with --quant awq" in res.stderr


def test_a_folder_whose_model_was_replaced_is_not_resumed_under_its_name(tmp_path):
    """Rows record the model folder's fingerprint (config.json, weight files' names and sizes): a
    resume after the folder got another model is refused instead of mixing the two under one name."""
    import shutil

    folder = save_checkpoint(tmp_path / "model", "tiny-llama", seed=1)
    out = tmp_path / "run"
    base = ["run", "--target", str(folder), "--systems", "ar", "--datasets", "gsm8k", "--max-new-tokens", "4",
            "--data-dir", str(DATA_DIR), "--device", "cpu", "--out", str(out)]
    res = CliRunner().invoke(app, base + ["--limit", "1"])
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    assert pd.read_parquet(out / "results.parquet").target_sha.str.len().eq(64).all()
    res = CliRunner().invoke(app, base + ["--limit", "2"])  # the same folder: resumed
    assert res.exit_code == 0, (res.stdout, res.stderr, res.exception)
    shutil.rmtree(folder)
    save_checkpoint(folder, "tiny-qwen2", seed=1)
    res = CliRunner().invoke(app, base + ["--limit", "3"])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, (res.stdout, res.stderr)
    assert f"holds rows of --target {folder} made from another model there" in res.stderr
    assert len(pd.read_parquet(out / "results.parquet")) == 2
