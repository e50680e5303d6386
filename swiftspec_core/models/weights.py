"""Weights for the engine: taken from a transformers model, or random at a preset's real shape.

Both produce the full (unsharded) state in the engine's own names; `build_engine` shards it for
a tensor-parallel rank (sharding.py) and loads it into a Transformer. On one process the engine
holds the state's tensors themselves, not copies: an engine made by `engine_from_hf` computes on
the very storage of the transformers model it was made from (one copy of the weights for both).
"""
from __future__ import annotations

import re
from collections.abc import Iterable

import torch

from ..comm.group import Group, SingleGroup
from .args import ModelArgs
from .pages import release_file_pages
from .transformer import Transformer


def state_from_hf(hf_model) -> tuple[ModelArgs, dict[str, torch.Tensor]]:
    """Engine-named full state from a LlamaForCausalLM / Qwen2ForCausalLM (fused qkv and gate/up).

    Every entry is the model's own tensor, or a view over its q/k/v (gate/up) where
    `fuse_projections` already stored them as one block; otherwise wqkv, bqkv and w_gate_up are new."""
    args = ModelArgs.from_hf_config(hf_model.config)
    return args, engine_named(args, hf_model.state_dict())


_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def hf_layer(name: str) -> int | None:
    """The layer index in a transformers parameter name (model.layers.3.mlp...); None outside layers."""
    m = _LAYER.match(name)
    return int(m.group(1)) if m else None


def engine_named(args: ModelArgs, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The engine's entries for the part of a transformers state dict that `sd` holds: any of the
    embedding, whole layers, the final norm and lm_head (random_parts.py draws them part by part)."""
    state = {}
    if "model.embed_tokens.weight" in sd:
        state["embed"] = sd["model.embed_tokens.weight"]
    if "model.norm.weight" in sd:
        state["norm"] = sd["model.norm.weight"]
    if not args.tie_embeddings and "lm_head.weight" in sd:
        state["lm_head"] = sd["lm_head.weight"]
    for i in sorted({hf_layer(name) for name in sd} - {None}):
        p = f"model.layers.{i}."
        state[f"layers.{i}.attn_norm"] = sd[p + "input_layernorm.weight"]
        state[f"layers.{i}.mlp_norm"] = sd[p + "post_attention_layernorm.weight"]
        state[f"layers.{i}.wqkv"] = _joined([sd[p + f"self_attn.{n}_proj.weight"] for n in "qkv"])
        if args.qkv_bias:
            state[f"layers.{i}.bqkv"] = _joined([sd[p + f"self_attn.{n}_proj.bias"] for n in "qkv"])
        state[f"layers.{i}.wo"] = sd[p + "self_attn.o_proj.weight"]
        state[f"layers.{i}.w_gate_up"] = _joined([sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"]])
        state[f"layers.{i}.w_down"] = sd[p + "mlp.down_proj.weight"]
    return state


def fuse_projections(hf_model) -> None:
    """Store each layer's q/k/v (weights, and biases where it has them) and gate/up as row blocks
    of one tensor each, the engine's wqkv / bqkv / w_gate_up, and point the model's projections
    at views of it: the model computes as before, and state_from_hf then takes the blocks whole.

    Layer by layer, letting the unfused tensors go at once (and the pages a file-mapped one had
    in memory), so that no more than one layer's projections ever exist twice."""
    for layer in hf_model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        _fuse([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
        if attn.q_proj.bias is not None:
            _fuse([attn.q_proj.bias, attn.k_proj.bias, attn.v_proj.bias])
        _fuse([mlp.gate_proj.weight, mlp.up_proj.weight])


def _fuse(params: list[torch.nn.Parameter]) -> None:
    parts = [p.data for p in params]
    if _adjacent(parts):
        return
    fused = torch.cat(parts)
    for p, view in zip(params, fused.split([len(t) for t in parts])):
        p.data = view
    for t in parts:
        release_file_pages(t)


def _adjacent(parts: list[torch.Tensor]) -> bool:
    """True when the tensors are contiguous row blocks, one right after the other, of one storage."""
    first = parts[0]
    end = first.storage_offset()
    for t in parts:
        if (not t.is_contiguous() or t.storage_offset() != end or t.shape[1:] != first.shape[1:]
                or t.untyped_storage().data_ptr() != first.untyped_storage().data_ptr()):
            return False
        end += t.numel()
    return True


def _joined(parts: list[torch.Tensor]) -> torch.Tensor:
    """The tensors stacked by rows: a view where they already lie so in one storage, else a new tensor."""
    if not _adjacent(parts):
        return torch.cat(parts)
    first = parts[0]
    rows = sum(len(t) for t in parts)
    return first.as_strided((rows, *first.shape[1:]), first.stride(), first.storage_offset())


def init_random_(named: Iterable[tuple[str, torch.Tensor]], seed: int, device) -> None:
    """The one rule for random weights: norms 1, every other tensor N(0, 0.02) (scaled like an
    initialised model, so activations stay finite), drawn in the order given from one generator
    seeded with `seed`. The same seed and the same names in the same order give the same values."""
    draw_random_(named, random_generator(seed, device))


def random_generator(seed: int, device) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def draw_random_(named: Iterable[tuple[str, torch.Tensor]], gen: torch.Generator) -> None:
    """init_random_'s rule from a generator already in use: drawing a model's tensors part by part,
    in order, from one generator gives the values init_random_ gives them all at once."""
    with torch.no_grad():
        for name, t in named:
            if "norm" in name:
                t.fill_(1.0)
            else:
                t.normal_(0.0, 0.02, generator=gen)


def random_state(args: ModelArgs, dtype: torch.dtype, device="cpu", seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights at the real shape, in the engine's names and order (init_random_)."""
    shapes = Transformer(args, dtype=dtype, device="meta").state_dict()
    state = {name: torch.empty(p.shape, dtype=dtype, device=device) for name, p in shapes.items()}
    init_random_(state.items(), seed, device)
    return state


def build_engine(args: ModelArgs, state: dict[str, torch.Tensor], *, dtype: torch.dtype, device="cpu",
                 group: Group | None = None, max_seq_len: int = 4096, compile: bool | None = None,
                 kernels: str = "torch") -> Transformer:
    """A Transformer holding this rank's shard of `state` (the whole of it on one process).

    The engine holds the given tensors themselves where they already have `dtype` and sit on
    `device` (one process), copies of them otherwise, and new shards under TP.
    compile: fuse the layers' elementwise work with torch.compile; by default on GPU only (on the
    CPU the eager ops are the reference the tests hold everything against), and never under
    kernels="fused" (Transformer.use_kernels: our kernels replace the compiled blocks)."""
    group = group or SingleGroup()
    local, vocab_start = args, 0
    if group.size > 1:
        from .sharding import shard_state

        local, state, vocab_start = shard_state(args, state, group.rank, group.size)
    return engine_of_shard(local, state, vocab_start, args.vocab_size, dtype=dtype, device=device, group=group,
                           max_seq_len=max_seq_len, compile=compile, kernels=kernels, consume=group.size > 1)


def engine_by_part(args: ModelArgs, parts: Iterable[dict[str, torch.Tensor]], *, quantize: bool, dtype: torch.dtype,
                   device="cpu", group: Group | None = None, max_seq_len: int = 4096,
                   kernels: str = "torch") -> Transformer:
    """build_engine's Transformer from the full state given part by part (engine-named: any of the
    embedding, whole layers, the final norm and lm_head; random_parts.py draws them,
    checkpoint_parts.py reads them), each part quantized by round-to-nearest where `quantize` (args
    are then the quantized model's) and this rank's shard of it kept before the next part comes:
    a rank's peak is its shard plus one part."""
    group = group or SingleGroup()
    local, state, vocab_start = args, {}, 0
    for part in parts:
        if quantize:
            from .awq import quantize_state

            part = quantize_state(part, args.quant_group)
        if group.size > 1:
            from .sharding import shard_state

            local, part, vocab_start = shard_state(args, part, group.rank, group.size)
            # A shard that is a view (a rank's vocabulary rows) would keep the whole tensor alive.
            part = {k: v.clone() if v.untyped_storage().nbytes() > v.nbytes else v for k, v in part.items()}
        state.update(part)
    return engine_of_shard(local, state, vocab_start, args.vocab_size, dtype=dtype, device=device, group=group,
                           max_seq_len=max_seq_len, kernels=kernels, consume=True)


def engine_of_shard(local: ModelArgs, state: dict[str, torch.Tensor], vocab_start: int, full_vocab: int, *,
                    dtype: torch.dtype, device="cpu", group: Group | None = None, max_seq_len: int = 4096,
                    compile: bool | None = None, kernels: str = "torch", consume: bool = False) -> Transformer:
    """build_engine's Transformer from a state already sharded for `group` (sharding.shard_state:
    local args, local state, first vocab row; the full model's vocabulary size). consume: `state`
    is the caller's to give up, and is emptied once loaded, so that it keeps no AWQ tensor in the
    hub's layout alive while the fused kernels' layout replaces it (use_kernels): the GPU measured
    75 GB at the peak for the AWQ Llama-3-70B's 40 GB (session 40, memory_stages.py)."""
    group = group or SingleGroup()
    model = Transformer(local, dtype=dtype, device="meta", group=group, vocab_start=vocab_start,
                        full_vocab=full_vocab, max_seq_len=max_seq_len)
    # AWQ tensors (int32 codes, fp16 scales) keep their dtype; everything else takes `dtype`.
    model.load_state_dict({k: v.to(device=device, dtype=dtype) if v.is_floating_point() and not k.endswith(".scales")
                           else v.to(device=device) for k, v in state.items()}, strict=True, assign=True)
    if consume:
        state.clear()
    model.requires_grad_(False)
    # The rope tables were made on the meta device; make them for real now.
    from .rope import rope_tables

    model.cos, model.sin = rope_tables(local, max_seq_len, device=device)
    model.use_kernels(kernels)
    if compile if compile is not None else (torch.device(device).type == "cuda" and kernels == "torch"):
        model.compile_blocks()
    return model


def engine_from_hf(hf_model, *, dtype: torch.dtype, device="cpu", group: Group | None = None,
                   max_seq_len: int = 4096, kernels: str = "torch", quant: str = "none") -> Transformer:
    """Our engine on a transformers model's weights: on one process the two then share every
    tensor (fuse_projections, then build_engine takes the state as it is); under TP the engine
    holds its shard, and the model's weights are the caller's to drop.

    quant="awq": the layer projections are quantized by round-to-nearest (models/awq.py); the
    engine holds them as 4-bit AWQ tensors of its own (the transformers model keeps its weights)."""
    fuse_projections(hf_model)
    args, state = state_from_hf(hf_model)
    if quant == "awq":
        from .awq import quantize_state, quantized_args

        args = quantized_args(args)
        state = quantize_state(state, args.quant_group)
    elif quant != "none":
        raise ValueError(f"quant {quant!r}: choose none or awq")
    return build_engine(args, state, dtype=dtype, device=device, group=group, max_seq_len=max_seq_len,
                        kernels=kernels)
