"""A model folder's weight files: which file holds each tensor, which tensors the model needs,
and reading some of them (a part of the model) without the rest.

A folder holds model.safetensors, or shards that model.safetensors.index.json maps tensor names to
(what save_pretrained and the hub write); where it has no safetensors, pytorch_model.bin or the
shards of pytorch_model.bin.index.json (what transformers 4 wrote with safe_serialization=False).
Reading the names and shapes costs the files' headers only (a .bin's: its zip directory and pickle,
its storages mapped, not read), so a checkpoint that lacks a tensor is refused before any weight is
read (check_tensors).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import UserError
from .awq import PACK, PARTS

SAFETENSORS_INDEX = "model.safetensors.index.json"
# (index, single file) of each kind of checkpoint, the one transformers prefers first.
CHECKPOINT_NAMES = ((SAFETENSORS_INDEX, "model.safetensors"), ("pytorch_model.bin.index.json", "pytorch_model.bin"))
_ZIP = b"PK\x03\x04"  # how a file of torch.save's zip format (torch 1.6 on) begins


def tensor_files(folder: Path) -> dict[str, str]:
    """Tensor name -> the checkpoint file (in `folder`) that holds it: its safetensors, else its .bin
    files; empty where the folder has neither (a GGUF checkpoint, config files alone), or .bin files
    of torch's format before 1.6, which cannot be mapped (transformers loads them whole)."""
    for index_name, single_name in CHECKPOINT_NAMES:
        index, single = folder / index_name, folder / single_name
        if index.is_file():
            try:
                files = dict(json.loads(index.read_text())["weight_map"])
            except (ValueError, KeyError, TypeError) as e:
                raise UserError(f"{index}: not a checkpoint index ({type(e).__name__}: {e})") from None
        elif single.is_file():
            files = None if _unmappable(single) else dict.fromkeys(open_checkpoint_file(single).names, single.name)
        else:
            continue
        if not files or any(_unmappable(folder / file) for file in set(files.values())):
            return {}
        return files
    return {}


def _unmappable(path: Path) -> bool:
    """A .bin file of torch's format before 1.6 (a missing file is left to check_tensors)."""
    if path.suffix != ".bin" or not path.is_file():
        return False
    with path.open("rb") as f:
        return f.read(len(_ZIP)) != _ZIP


@dataclass(frozen=True)
class CheckpointFile:
    """A checkpoint file opened: its tensors' names and shapes, and a tensor read when asked for (on
    the CPU; a .bin's refers to the file's mapping, which goes with the last tensor of it)."""
    names: frozenset[str]
    shape: Callable[[str], tuple[int, ...]]
    tensor: Callable[[str], torch.Tensor]


def open_checkpoint_file(path: Path) -> CheckpointFile:
    """A safetensors or .bin file opened, no weight read: a UserError naming it where it cannot be."""
    try:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            f = safe_open(str(path), framework="pt", device="cpu")
            return CheckpointFile(frozenset(f.keys()), lambda n: tuple(f.get_slice(n).get_shape()), f.get_tensor)
        held = torch.load(path, map_location="cpu", mmap=True, weights_only=True)  # maps, reads no weight
        if not (isinstance(held, dict) and all(isinstance(t, torch.Tensor) for t in held.values())):
            raise ValueError(f"holds a {type(held).__name__}, not tensors by name")
        return CheckpointFile(frozenset(held), lambda n: tuple(held[n].shape), held.__getitem__)
    except Exception as e:  # safetensors and torch raise their own error types for a damaged file
        raise UserError(f"{path}: cannot read its header ({' '.join(str(e).split())})") from None


def needed_tensors(config, awq_group: int | None = None) -> dict[str, tuple[int, ...]]:
    """The tensors (transformers' names, in the model's order) a checkpoint of this config must
    hold, with their shapes: the model's parameters, a tied matrix once; an AWQ checkpoint
    (awq_group: its group size) holds each layer projection's weight [N, K] as its three packed
    tensors (awq.py): qweight [K, N / 8], qzeros [K / G, N / 8], scales [K / G, N]. `config` has no
    quantization_config (the model transformers builds is the plain one)."""
    from .random_parts import hf_parameters
    from .weights import hf_layer

    needed = {}
    for name, shape, _ in hf_parameters(config, torch.float32):
        if awq_group and hf_layer(name) is not None and name.endswith("_proj.weight"):
            base, (n, k) = name.removesuffix(".weight"), shape
            packed = ((k, n // PACK), (k // awq_group, n // PACK), (k // awq_group, n))
            needed.update({f"{base}.{part}": dims for part, dims in zip(PARTS, packed)})
        else:
            needed[name] = tuple(shape)
    return needed


def check_tensors(folder: Path, files: dict[str, str], needed: dict[str, tuple[int, ...]]) -> None:
    """UserError unless every needed tensor is in the folder's files, each file readable and each
    tensor of the shape its config says, and no layer past its config's, read from the files'
    headers alone (no weight is read)."""
    from .weights import hf_layer

    layers = {hf_layer(n) for n in needed} - {None}
    beyond = sorted({hf_layer(n) for n in files} - {None} - layers)
    if beyond:  # transformers would drop them with a warning: the model would not be the checkpoint's
        raise UserError(f"{folder}: the checkpoint holds layer {beyond[0]}, but config.json makes {len(layers)} layers")
    missing = [n for n in needed if n not in files]
    if missing:
        raise UserError(f"{folder}: the checkpoint lacks {len(missing)} tensors its config needs, e.g. "
                        f"{', '.join(missing[:3])}")
    for file, names in _by_file(files, needed).items():
        path = folder / file
        if not path.is_file():
            raise UserError(f"{path}: no such file, though the checkpoint's index names it for {names[0]}")
        opened = open_checkpoint_file(path)
        for name in names:
            if name not in opened.names:
                raise UserError(f"{path}: holds no {name}, though the checkpoint's index says it does")
            if opened.shape(name) != needed[name]:
                raise UserError(f"{path}: {name} is {list(opened.shape(name))}, but the model's config.json makes "
                                f"it {list(needed[name])}")


def read_tensors(folder: Path, files: dict[str, str], names: Iterable[str]) -> dict[str, torch.Tensor]:
    """The named tensors, on the CPU, read file by file (each file's other tensors stay unread; a
    .bin's tensors refer to its mapping: CheckpointRecipe._read copies them)."""
    tensors = {}
    for file, in_file in _by_file(files, names).items():
        opened = open_checkpoint_file(folder / file)
        tensors.update({name: opened.tensor(name) for name in in_file})
    return tensors


def _by_file(files: dict[str, str], names: Iterable[str]) -> dict[str, list[str]]:
    """The names grouped by the file holding each, in their order."""
    by_file: dict[str, list[str]] = {}
    for name in names:
        by_file.setdefault(files[name], []).append(name)
    return by_file
