"""A random-weight engine drawn part by part: under --weights random --quant awq, and for every TP
rank's shard (loading.load_engine).

The plain way to it (loading._random_model, then weights.engine_from_hf) builds the transformers
model at full size in the dtype first: 140 GB for Llama-3-70B in bf16, more than an H200 holds,
for an AWQ engine of about 40 GB, or a TP 2 rank's bf16 shard of 70 GB. Here each part of the
model (the embedding, one layer, the final norm with lm_head) is drawn by the same rule, in the
same order, from the same generator (weights.init_random_ over the transformers model's
parameters, whose names and shapes a meta-device copy gives), its projections quantized by
round-to-nearest under awq (awq.quantize_state), this rank's shard taken under TP
(sharding.shard_state), and its dtype tensors dropped before the next part is drawn. Peak memory
is the engine (this rank's shard) plus one part in the dtype; the engine equals the plain way's bit
for bit (tests/test_random_awq.py).

No transformers model exists then, so the hf-* peers cannot run such a target (runner.validate),
and a draft that takes noise or becomes a twin (models/noise.py) is built the plain way.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from ..comm.group import Group, SingleGroup
from .args import ModelArgs
from .awq import quantize_state, quantized_args
from .transformer import Transformer
from .weights import draw_random_, engine_named, engine_of_shard, hf_layer, random_generator

@dataclass(frozen=True)
class RandomRecipe:
    """What the engine of a random-weight model is drawn from when it is built, part by part: the
    values are those loading._random_model would give the transformers model."""
    config: object  # the transformers config (LlamaConfig / Qwen2Config)
    seed: int
    dtype: torch.dtype  # the dtype and device the weights are drawn in, as _random_model would
    device: torch.device
    quant: str  # the engine's layer projections: none or awq (models/awq.py)


def hf_parameters(config, dtype: torch.dtype) -> list[tuple[str, torch.Size, torch.dtype]]:
    """(name, shape, dtype) of the transformers model's parameters in its own order, a tied matrix
    once: the order init_random_ draws them in (loading._random_model). Read off a meta-device copy."""
    from transformers import AutoModelForCausalLM
    from transformers.initialization import no_init_weights

    with torch.device("meta"), no_init_weights():
        hf = AutoModelForCausalLM.from_config(config, dtype=dtype)
    hf.tie_weights()
    return [(name, p.shape, p.dtype) for name, p in hf.named_parameters()]


def random_engine(recipe: RandomRecipe, *, dtype: torch.dtype, device="cpu", group: Group | None = None,
                  max_seq_len: int = 4096, kernels: str = "torch") -> Transformer:
    """This rank's engine of the recipe's random model, as weights.engine_from_hf(quant=recipe.quant)
    builds it from that model, with no more than one part of the model in the dtype at a time."""
    group = group or SingleGroup()
    awq = recipe.quant == "awq"
    args = ModelArgs.from_hf_config(recipe.config)
    args = quantized_args(args) if awq else args
    gen = random_generator(recipe.seed, recipe.device)
    local, state, vocab_start = args, {}, 0
    # Consecutive runs of one part: the embedding, layer 0, ..., layer L - 1, then norm and lm_head.
    for _, params in itertools.groupby(hf_parameters(recipe.config, recipe.dtype), key=lambda p: hf_layer(p[0])):
        drawn = {name: torch.empty(shape, dtype=dt, device=recipe.device) for name, shape, dt in params}
        draw_random_(drawn.items(), gen)
        part = engine_named(args, drawn)
        part = quantize_state(part, args.quant_group) if awq else part
        del drawn  # unsharded, the part's tensors go with `part` below (AWQ: its dtype projections here)
        if group.size > 1:
            from .sharding import shard_state

            local, part, vocab_start = shard_state(args, part, group.rank, group.size)
            # A shard that is a view (a rank's vocabulary rows) would keep the whole tensor alive.
            part = {k: v.clone() if v.untyped_storage().nbytes() > v.nbytes else v for k, v in part.items()}
        state.update(part)
    return engine_of_shard(local, state, vocab_start, args.vocab_size, dtype=dtype, device=device, group=group,
                           max_seq_len=max_seq_len, kernels=kernels)
