"""A model folder's safetensors files: which file holds each tensor, which tensors the model needs,
and reading some of them (a part of the model) without the rest.

A folder holds model.safetensors, or shards that model.safetensors.index.json maps tensor names to
(what save_pretrained and the hub write). Reading the names costs the files' headers only, so a
checkpoint that lacks a tensor is refused before any weight is read (check_tensors).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import torch

from ..errors import UserError
from .awq import PARTS

SAFETENSORS_INDEX = "model.safetensors.index.json"


def tensor_files(folder: Path) -> dict[str, str]:
    """Tensor name -> the safetensors file (in `folder`) that holds it; empty where the folder has
    none (a .bin or GGUF checkpoint, or config files alone)."""
    from safetensors import safe_open

    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        try:
            return dict(json.loads(index.read_text())["weight_map"])
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"{index}: not a safetensors index ({type(e).__name__}: {e})") from None
    single = folder / "model.safetensors"
    if not single.is_file():
        return {}
    try:
        with safe_open(str(single), framework="pt") as f:
            return dict.fromkeys(f.keys(), single.name)
    except Exception as e:  # safetensors raises its own error types for a damaged header
        raise UserError(f"{single}: cannot read its header ({e})") from None


def needed_tensors(config, awq: bool) -> list[str]:
    """The tensors (transformers' names, in the model's order) a checkpoint of this config must
    hold: the model's parameters, a tied matrix once; an AWQ checkpoint holds each layer
    projection's weight as its three packed tensors. `config` has no quantization_config (the
    model transformers builds is the plain one)."""
    from .random_parts import hf_parameters
    from .weights import hf_layer

    names = []
    for name, _, _ in hf_parameters(config, torch.float32):
        if awq and hf_layer(name) is not None and name.endswith("_proj.weight"):
            base = name.removesuffix(".weight")
            names += [f"{base}.{part}" for part in PARTS]
        else:
            names.append(name)
    return names


def check_tensors(folder: Path, files: dict[str, str], needed: Iterable[str]) -> None:
    """UserError unless every needed tensor is in the folder's files."""
    missing = [n for n in needed if n not in files]
    if missing:
        raise UserError(f"{folder}: the checkpoint lacks {len(missing)} tensors its config needs, e.g. "
                        f"{', '.join(missing[:3])}")


def read_tensors(folder: Path, files: dict[str, str], names: Iterable[str]) -> dict[str, torch.Tensor]:
    """The named tensors, on the CPU, read file by file (each file's other tensors stay unread)."""
    from safetensors import safe_open

    by_file: dict[str, list[str]] = {}
    for name in names:
        by_file.setdefault(files[name], []).append(name)
    tensors = {}
    for file, in_file in by_file.items():
        with safe_open(str(folder / file), framework="pt", device="cpu") as f:
            tensors.update({name: f.get_tensor(name) for name in in_file})
    return tensors
