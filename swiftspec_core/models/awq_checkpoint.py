"""AWQ checkpoints as AutoAWQ publishes them on the hub (a folder or a hub id whose config.json
says quantization_config.quant_method = "awq", version "gemm", 4 bits with zero points), read
straight from their safetensors (checkpoint_parts.py, part by part or whole) into the engine's state: q/k/v and gate/up joined along N as the
engine's wqkv and w_gate_up (a join along N keeps every group: groups run along K), every other
tensor under the engine's name.

Reading the tensors ourselves needs no AWQ package; transformers would want one (autoawq) to
load such a checkpoint at all.
"""
from __future__ import annotations

import torch

from ..errors import UserError
from .args import ModelArgs
from .awq import PARTS, AWQWeight
from .weights import hf_layer


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
    """Engine-named state for the part of a hub AWQ checkpoint's tensors (transformers' names) that
    `tensors` holds: any of the embedding, whole layers, the final norm and lm_head (a whole
    checkpoint, or one part: checkpoint_parts.py). That the checkpoint holds every part is checked
    before it is read (checkpoint_files.check_tensors)."""

    def packed(prefix: str) -> AWQWeight:
        try:
            return AWQWeight(*(tensors[f"{prefix}.{part}"] for part in PARTS))
        except KeyError as e:
            raise UserError(f"the AWQ checkpoint lacks {e.args[0]}") from None

    def plain(name: str) -> torch.Tensor:
        if name not in tensors:
            raise UserError(f"the AWQ checkpoint lacks {name}")
        return tensors[name]

    outside = {"embed": "model.embed_tokens.weight", "norm": "model.norm.weight"}
    if not args.tie_embeddings:
        outside["lm_head"] = "lm_head.weight"
    state = {name: tensors[hf_name] for name, hf_name in outside.items() if hf_name in tensors}
    for i in sorted({hf_layer(name) for name in tensors} - {None}):
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


def awq_args(config, where: str) -> ModelArgs:
    """An AWQ checkpoint's args (quant awq, its group), UserError unless its quantization_config is
    the layout models/awq.py reads."""
    quant = config.quantization_config
    check_awq_config(quant if isinstance(quant, dict) else quant.to_dict(), where)
    return ModelArgs.from_hf_config(config)


def is_awq_quantization(quant) -> bool:
    """Whether a config's quantization_config (a dict as config.json holds it, transformers' object,
    or None) is AWQ's."""
    quant = quant or {}
    return (quant if isinstance(quant, dict) else quant.to_dict()).get("quant_method") == "awq"


def check_quant(name: str, awq_checkpoint: bool, quant: str) -> None:
    """UserError unless an engine of `quant` can be built on the model `name`: an AWQ checkpoint runs
    as the target, under --quant awq (a draft's projections stay plain). A run asks before loading
    (a folder's config.json: model_spec) and once loaded (a hub id), where every engine would be
    built in workers."""
    if awq_checkpoint and quant != "awq":
        raise UserError(f"{name} is an AWQ checkpoint: it runs as the target, with --quant awq")
