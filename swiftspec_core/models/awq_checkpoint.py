"""AWQ checkpoints as AutoAWQ publishes them on the hub (a folder or a hub id whose config.json
says quantization_config.quant_method = "awq", version "gemm", 4 bits with zero points), read
straight from their safetensors into the engine's state: q/k/v and gate/up joined along N as the
engine's wqkv and w_gate_up (a join along N keeps every group: groups run along K), every other
tensor under the engine's name.

Reading the tensors ourselves needs no AWQ package; transformers would want one (autoawq) to
load such a checkpoint at all.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from ..errors import UserError
from .args import ModelArgs
from .awq import PARTS, AWQWeight

SAFETENSORS_INDEX = "model.safetensors.index.json"


def check_awq_config(quant: dict, where: str) -> None:
    """UserError unless the quantization_config is the layout models/awq.py reads."""
    wanted = dict(quant_method="awq", bits=4, version="gemm", zero_point=True)
    found = {k: quant.get(k, v if k in ("version", "zero_point") else None) for k, v in wanted.items()}
    if isinstance(found["version"], str):
        found["version"] = found["version"].lower()
    if found != wanted:
        raise UserError(f"{where}: quantization_config {found} is not AutoAWQ's 4-bit GEMM layout with zero points")


def _join(parts: list[AWQWeight]) -> AWQWeight:
    """Projections stacked along N (output columns), as torch.cat stacks nn.Linear weights by rows."""
    return AWQWeight(*(torch.cat(ts, dim=1) for ts in zip(*parts)))


def state_from_awq_tensors(args: ModelArgs, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Engine-named state from a hub AWQ checkpoint's tensors (transformers' names)."""

    def packed(prefix: str) -> AWQWeight:
        try:
            return AWQWeight(*(tensors[f"{prefix}.{part}"] for part in PARTS))
        except KeyError as e:
            raise UserError(f"the AWQ checkpoint lacks {e.args[0]}") from None

    def plain(name: str) -> torch.Tensor:
        if name not in tensors:
            raise UserError(f"the AWQ checkpoint lacks {name}")
        return tensors[name]

    state = {"embed": plain("model.embed_tokens.weight"), "norm": plain("model.norm.weight")}
    if not args.tie_embeddings:
        state["lm_head"] = plain("lm_head.weight")
    for i in range(args.n_layers):
        p = f"model.layers.{i}."
        state[f"layers.{i}.attn_norm"] = plain(p + "input_layernorm.weight")
        state[f"layers.{i}.mlp_norm"] = plain(p + "post_attention_layernorm.weight")
        named = {
            "wqkv": _join([packed(p + f"self_attn.{n}_proj") for n in "qkv"]),
            "wo": packed(p + "self_attn.o_proj"),
            "w_gate_up": _join([packed(p + "mlp.gate_proj"), packed(p + "mlp.up_proj")]),
            "w_down": packed(p + "mlp.down_proj"),
        }
        for name, w in named.items():
            state.update({f"layers.{i}.{name}.{part}": t for part, t in zip(PARTS, w)})
        if args.qkv_bias:
            state[f"layers.{i}.bqkv"] = torch.cat([plain(p + f"self_attn.{n}_proj.bias") for n in "qkv"])
    return state


def read_safetensors(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of a folder's model.safetensors, or of the shards its index lists."""
    from safetensors.torch import load_file

    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (folder / "model.safetensors").is_file():
        files = ["model.safetensors"]
    else:
        raise UserError(f"{folder}: an AWQ checkpoint needs model.safetensors (or its index)")
    tensors: dict[str, torch.Tensor] = {}
    for name in files:
        tensors.update(load_file(str(folder / name)))
    return tensors


def load_awq_checkpoint(folder: Path, config) -> tuple[ModelArgs, dict[str, torch.Tensor]]:
    """(args, engine state) of an AWQ checkpoint folder whose transformers config is `config`."""
    quant = config.quantization_config
    check_awq_config(quant if isinstance(quant, dict) else quant.to_dict(), str(folder))
    args = ModelArgs.from_hf_config(config)
    return args, state_from_awq_tensors(args, read_safetensors(Path(folder)))
