"""A model folder's weight files, safetensors or .bin, checked before any weight is read
(models/checkpoint_files.py): a missing or damaged file, a missing tensor, a config.json its
tensors do not fit, each one error line; and which files a folder is read from (safetensors
first, .bin files where it has none, a .bin of torch's old format whole as before)."""
from __future__ import annotations

import json
import shutil
from fnmatch import fnmatch
from pathlib import Path

import pytest
import torch

from swiftspec_core.errors import UserError
from swiftspec_core.models import checkpoint_files, checkpoint_parts, loading
from swiftspec_core.models.loading import load_model
from tests.test_checkpoint_parts import as_bin, awq_checkpoint, mismatches, save_checkpoint


def refuse_weight_reads(monkeypatch) -> None:
    """A weight read, part by part or the whole way, fails the test."""
    for module in (checkpoint_files, checkpoint_parts):  # checkpoint_parts holds its own name for it
        monkeypatch.setattr(module, "read_tensors", lambda *a: pytest.fail("a weight was read"))
    monkeypatch.setattr(loading, "_pretrained", lambda *a: pytest.fail("the whole way ran"))


def refused(folder: Path, says: str, **how) -> None:
    """Loading `folder` so is one UserError line that says `says` (a pattern)."""
    with pytest.raises(UserError, match=says) as caught:
        load_model(str(folder), **how)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("bin_files", [False, True])
def test_a_checkpoint_that_lacks_a_tensor_is_refused_before_any_weight_is_read(tmp_path, monkeypatch, bin_files):
    folder = save_checkpoint(tmp_path, "tiny-llama", seed=1, bin_files=bin_files)
    file = "pytorch_model.bin" if bin_files else "model.safetensors"
    drop_tensor(folder / file, "model.layers.1.mlp.up_proj.weight")
    refuse_weight_reads(monkeypatch)
    for how in (dict(device="meta"), dict(by_part=True)):  # the run's own process, a worker
        refused(folder, r"lacks 1 tensors its config needs, e.g. model.layers.1.mlp.up_proj.weight", **how)


def drop_tensor(path: Path, name: str) -> None:
    """Write a safetensors or .bin checkpoint file anew without the tensor `name`."""
    from safetensors.torch import load_file, save_file

    tensors = torch.load(path, weights_only=True) if path.suffix == ".bin" else load_file(str(path))
    del tensors[name]
    if path.suffix == ".bin":
        torch.save(tensors, path)
    else:
        save_file(tensors, str(path), metadata={"format": "pt"})


def _break(folder: Path, how: str) -> str:
    """Damage a sharded checkpoint folder (one file a part, safetensors or .bin) as a user's copy
    might be; returns the error its headers give."""
    index_file = next(folder / name for name in ("model.safetensors.index.json", "pytorch_model.bin.index.json")
                      if (folder / name).is_file())
    index = json.loads(index_file.read_text())
    layer1 = index["weight_map"]["model.layers.1.mlp.down_proj.weight"]
    if how == "file gone":
        (folder / layer1).unlink()
        return "no such file, though the checkpoint's index names it"
    if how == "truncated":
        data = (folder / layer1).read_bytes()
        (folder / layer1).write_bytes(data[: len(data) // 2])
        return f"{layer1}: cannot read its header"
    if how == "tensor gone from its file":
        drop_tensor(folder / layer1, "model.layers.1.mlp.down_proj.weight")
        return "holds no model.layers.1.mlp.down_proj.weight, though the checkpoint's index says it does"
    config = json.loads((folder / "config.json").read_text())
    if how == "config's ffn":
        config["intermediate_size"] = 64
        message = r"model.layers.0.mlp.gate_proj.weight is \[96, 64\], but the model's config.json makes it \[64, 64\]"
    else:  # "config's layers"
        config["num_hidden_layers"] = 1
        message = "holds layer 1, but config.json makes 1 layers"
    (folder / "config.json").write_text(json.dumps(config))
    return message


@pytest.mark.parametrize("bin_files", [False, True])
@pytest.mark.parametrize("how", ["file gone", "truncated", "tensor gone from its file", "config's ffn",
                                 "config's layers"])
def test_a_damaged_checkpoint_is_one_error_before_any_weight_is_read(tmp_path, monkeypatch, how, bin_files):
    """Every way a folder loads (the run's own process whole or on the meta device, a worker by part)
    reads its files' headers first (a .bin's: its zip directory and pickle): a missing or cut file, a
    tensor the index promises that its file lacks, a config.json the tensors do not fit (the ffn: a
    TP rank's slices would have run a wrong model; extra layers: transformers would drop them) is one
    UserError, no weight read."""
    folder = save_checkpoint(tmp_path / "model", "tiny-llama", seed=1, shard_size="100KB", bin_files=bin_files)
    says = _break(folder, how)
    refuse_weight_reads(monkeypatch)
    for how_loaded in (dict(), dict(device="meta"), dict(by_part=True)):
        refused(folder, says, **how_loaded)


def test_a_bin_that_is_no_state_dict_is_one_error(tmp_path, monkeypatch):
    folder = save_checkpoint(tmp_path, "tiny-llama", seed=1, bin_files=True)
    torch.save([torch.zeros(2)], folder / "pytorch_model.bin")
    refuse_weight_reads(monkeypatch)
    refused(folder, r"pytorch_model.bin: cannot read its header \(holds a list, not tensors by name\)", by_part=True)


def test_safetensors_are_read_where_a_folder_has_bin_files_too(tmp_path, monkeypatch):
    folder = save_checkpoint(tmp_path / "model", "tiny-llama", seed=1)
    shutil.copytree(as_bin(save_checkpoint(tmp_path / "other", "tiny-llama", seed=2)), folder, dirs_exist_ok=True)
    assert set(checkpoint_files.tensor_files(folder).values()) == {"model.safetensors"}
    (folder / "model.safetensors").unlink()
    assert set(checkpoint_files.tensor_files(folder).values()) == {"pytorch_model.bin"}


def test_a_bin_of_torchs_old_format_loads_whole(tmp_path):
    """torch.save's format before torch 1.6 cannot be mapped: such a .bin loads whole on every rank
    (transformers reads it), as every .bin did before."""
    folder = save_checkpoint(tmp_path, "tiny-llama", seed=1, bin_files=True)
    how = dict(dtype=torch.float32, max_seq_len=64)
    by_part = load_model(str(folder), by_part=True)
    assert by_part.parts is not None
    want = loading.engine_of(by_part, **how)
    tensors = torch.load(folder / "pytorch_model.bin", weights_only=True)
    torch.save(tensors, folder / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    assert checkpoint_files.tensor_files(folder) == {}
    whole = load_model(str(folder), by_part=True)
    assert whole.parts is None and not next(whole.hf.parameters()).is_meta
    assert mismatches(loading.engine_of(whole, **how), want) == []


def test_an_awq_checkpoint_of_bin_files_is_refused(tmp_path):
    folder = as_bin(awq_checkpoint(tmp_path))
    refused(folder, "an AWQ checkpoint needs model.safetensors", quant="awq", hf_twin=False)


def test_a_hub_checkpoint_without_safetensors_is_read_from_its_bin_files(tmp_path, monkeypatch):
    """A hub id read part by part (a worker's) downloads its config and safetensors; where it has
    none (its pytorch_model.bin.index.json came with the config), its .bin files."""
    import huggingface_hub

    patterns = []

    def snapshot_download(hub_id, allow_patterns):  # the hub, a local folder standing in for it
        patterns.append(allow_patterns)
        cache = tmp_path / "cache" / hub_id
        cache.mkdir(parents=True, exist_ok=True)
        for file in (tmp_path / hub_id).iterdir():
            if any(fnmatch(file.name, p) for p in allow_patterns):
                shutil.copy(file, cache)
        return str(cache)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    save_checkpoint(tmp_path / "org" / "st", "tiny-llama", seed=1, shard_size="100KB")
    as_bin(save_checkpoint(tmp_path / "org" / "bin", "tiny-llama", seed=1, shard_size="100KB"))
    for hub_id, downloads, kind in (("org/st", 1, ".safetensors"), ("org/bin", 2, ".bin")):
        patterns.clear()
        folder = loading._hub_folder(hub_id, hub_id)
        assert len(patterns) == downloads and not list(folder.glob("*.safetensors" if kind == ".bin" else "*.bin"))
        files = checkpoint_files.tensor_files(folder)
        assert files and all(file.endswith(kind) and (folder / file).is_file() for file in files.values())
