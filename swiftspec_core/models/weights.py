"""Weights for the engine: taken from a transformers model, or random at a preset's real shape.

Both produce the full (unsharded) state in the engine's own names; `build_engine` shards it for
a tensor-parallel rank (sharding.py) and loads it into a Transformer.
"""
from __future__ import annotations

import torch

from ..comm.group import Group, SingleGroup
from .args import ModelArgs
from .transformer import Transformer


def state_from_hf(hf_model) -> tuple[ModelArgs, dict[str, torch.Tensor]]:
    """Engine-named full state from a LlamaForCausalLM / Qwen2ForCausalLM (fused qkv and gate/up)."""
    args = ModelArgs.from_hf_config(hf_model.config)
    sd = hf_model.state_dict()
    state = {"embed": sd["model.embed_tokens.weight"], "norm": sd["model.norm.weight"]}
    if not args.tie_embeddings:
        state["lm_head"] = sd["lm_head.weight"]
    for i in range(args.n_layers):
        p = f"model.layers.{i}."
        state[f"layers.{i}.attn_norm"] = sd[p + "input_layernorm.weight"]
        state[f"layers.{i}.mlp_norm"] = sd[p + "post_attention_layernorm.weight"]
        state[f"layers.{i}.wqkv"] = torch.cat([sd[p + f"self_attn.{n}_proj.weight"] for n in "qkv"])
        if args.qkv_bias:
            state[f"layers.{i}.bqkv"] = torch.cat([sd[p + f"self_attn.{n}_proj.bias"] for n in "qkv"])
        state[f"layers.{i}.wo"] = sd[p + "self_attn.o_proj.weight"]
        state[f"layers.{i}.w_gate_up"] = torch.cat([sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"]])
        state[f"layers.{i}.w_down"] = sd[p + "mlp.down_proj.weight"]
    return args, state


def random_state(args: ModelArgs, dtype: torch.dtype, device="cpu", seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights at the real shape, scaled like an initialised model so activations stay finite."""
    gen = torch.Generator(device=device).manual_seed(seed)
    model = Transformer(args, dtype=dtype, device="meta")
    state = {}
    for name, p in model.state_dict().items():
        if "norm" in name:
            state[name] = torch.ones(p.shape, dtype=dtype, device=device)
        else:
            t = torch.empty(p.shape, dtype=dtype, device=device)
            state[name] = t.normal_(0.0, 0.02, generator=gen)
    return state


def build_engine(args: ModelArgs, state: dict[str, torch.Tensor], *, dtype: torch.dtype, device="cpu",
                 group: Group | None = None, max_seq_len: int = 4096, compile: bool | None = None) -> Transformer:
    """A Transformer holding this rank's shard of `state` (the whole of it on one process).

    compile: fuse the layers' elementwise work with torch.compile; by default on GPU only (on the
    CPU the eager ops are the reference the tests hold everything against)."""
    group = group or SingleGroup()
    vocab_start, full_vocab = 0, args.vocab_size
    if group.size > 1:
        from .sharding import shard_state

        args, state, vocab_start = shard_state(args, state, group.rank, group.size)
    model = Transformer(args, dtype=dtype, device="meta", group=group, vocab_start=vocab_start,
                        full_vocab=full_vocab, max_seq_len=max_seq_len)
    model.to_empty(device=device)
    model.load_state_dict({k: v.to(dtype) for k, v in state.items()}, strict=True, assign=False)
    # The rope tables were made on the meta device; make them for real now.
    from .rope import rope_tables

    model.cos, model.sin = rope_tables(args, max_seq_len, device=device)
    if compile if compile is not None else torch.device(device).type == "cuda":
        model.compile_blocks()
    return model


def load_engine(spec: str, *, weights: str, dtype: torch.dtype, device="cpu", seed: int = 0,
                group: Group | None = None, max_seq_len: int = 4096, noise: float = 0.0) -> Transformer:
    """Our engine for a model spec (preset, folder, .gguf or hub id), sharded for `group`; its
    weights plus relative noise where `noise` is given (noise.perturb)."""
    from .loading import load_model

    loaded = load_model(spec, weights=weights, dtype=dtype, device=device, seed=seed)
    if noise:
        from .noise import perturb

        perturb(loaded.hf, noise, seed)
    args, state = state_from_hf(loaded.hf)
    return build_engine(args, state, dtype=dtype, device=device, group=group, max_seq_len=max_seq_len)
