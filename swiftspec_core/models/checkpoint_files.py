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
from .awq import PACK, PARTS

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
    from safetensors import safe_open

    from .weights import hf_layer

    layers = {hf_layer(n) for n in needed} - {None}
    beyond = sorted({hf_layer(n) for n in files} - {None} - layers)
    if beyond:  # transformers would drop them with a warning: the model would not be the checkpoint's
        raise UserError(f"{folder}: the checkpoint holds layer {beyond[0]}, but config.json makes {len(layers)} layers")
    missing = [n for n in needed if n not in files]
    if missing:
        raise UserError(f"{folder}: the checkpoint lacks {len(missing)} tensors its config needs, e.g. "
                        f"{', '.join(missing[:3])}")
    by_file: dict[str, list[str]] = {}
    for name in needed:
        by_file.setdefault(files[name], []).append(name)
    for file, names in by_file.items():
        path = folder / file
        if not path.is_file():
            raise UserError(f"{path}: no such file, though the checkpoint's index names it for {names[0]}")
        try:
            with safe_open(str(path), framework="pt") as f:
                held = set(f.keys())
                shapes = {n: tuple(f.get_slice(n).get_shape()) for n in names if n in held}
        except Exception as e:  # safetensors raises its own error types for a damaged file
            raise UserError(f"{path}: cannot read its header ({' '.join(str(e).split())})") from None
        for name in names:
            if name not in held:
                raise UserError(f"{path}: holds no {name}, though the checkpoint's index says it does")
            if shapes[name] != needed[name]:
                raise UserError(f"{path}: {name} is {list(shapes[name])}, but the model's config.json makes it "
                                f"{list(needed[name])}")


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
