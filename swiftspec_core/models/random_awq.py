"""A random-weight AWQ engine drawn and quantized layer by layer (--weights random --quant awq).

The plain way to it (loading._random_model, then weights.engine_from_hf) builds the transformers
model at full size in the dtype first: 140 GB for Llama-3-70B in bf16, more than an H200 holds,
for an engine of about 40 GB. Here each part of the model (the embedding, one layer, the final
norm with lm_head) is drawn by the same rule, in the same order, from the same generator
(weights.init_random_ over the transformers model's parameters, whose names and shapes a
meta-device copy gives), its projections quantized by round-to-nearest (awq.quantize_state), this
rank's shard taken under TP (sharding.shard_state), and its dtype tensors dropped before the next
part is drawn. Peak memory is the AWQ engine (this rank's shard) plus one part in the dtype; the
engine equals the plain way's bit for bit (tests/test_random_awq.py).

No transformers model exists then, so the hf-* peers cannot run such a target (runner.validate).
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
class RandomAWQ:
    """What the engine of a random-weight model under --quant awq is drawn from when it is built:
    the values are those loading._random_model would give the transformers model."""
    config: object  # the transformers config (LlamaConfig / Qwen2Config)
    seed: int
    dtype: torch.dtype  # the dtype and device the weights are drawn in, as _random_model would
    device: torch.device


def hf_parameters(config, dtype: torch.dtype) -> list[tuple[str, torch.Size, torch.dtype]]:
    """(name, shape, dtype) of the transformers model's parameters in its own order, a tied matrix
    once: the order init_random_ draws them in (loading._random_model). Read off a meta-device copy."""
    from transformers import AutoModelForCausalLM
    from transformers.initialization import no_init_weights

    with torch.device("meta"), no_init_weights():
        hf = AutoModelForCausalLM.from_config(config, dtype=dtype)
    hf.tie_weights()
    return [(name, p.shape, p.dtype) for name, p in hf.named_parameters()]


def random_awq_engine(recipe: RandomAWQ, *, dtype: torch.dtype, device="cpu", group: Group | None = None,
                      max_seq_len: int = 4096, kernels: str = "torch") -> Transformer:
    """This rank's AWQ engine of the recipe's random model, as weights.engine_from_hf(quant="awq")
    builds it from that model, with no more than one part of the model in the dtype at a time."""
    group = group or SingleGroup()
    args = quantized_args(ModelArgs.from_hf_config(recipe.config))
    gen = random_generator(recipe.seed, recipe.device)
    local, state, vocab_start = args, {}, 0
    # Consecutive runs of one part: the embedding, layer 0, ..., layer L - 1, then norm and lm_head.
    for _, params in itertools.groupby(hf_parameters(recipe.config, recipe.dtype), key=lambda p: hf_layer(p[0])):
        drawn = {name: torch.empty(shape, dtype=dt, device=recipe.device) for name, shape, dt in params}
        draw_random_(drawn.items(), gen)
        part = quantize_state(engine_named(args, drawn), args.quant_group)
        del drawn  # the part's dtype projections go with it (the norms, embed and lm_head stay in part)
        if group.size > 1:
            from .sharding import shard_state

            local, part, vocab_start = shard_state(args, part, group.rank, group.size)
            # A shard that is a view (a rank's vocabulary rows) would keep the whole tensor alive.
            part = {k: v.clone() if v.untyped_storage().nbytes() > v.nbytes else v for k, v in part.items()}
        state.update(part)
    return engine_of_shard(local, state, vocab_start, args.vocab_size, dtype=dtype, device=device, group=group,
                           max_seq_len=max_seq_len, kernels=kernels)
