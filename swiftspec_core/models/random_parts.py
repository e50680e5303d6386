"""A random-weight engine drawn part by part: under --weights random --quant awq, and for every TP
rank's shard (loading.load_engine).

The plain way to it (loading._random_model, then weights.engine_from_hf) builds the transformers
model at full size in the dtype first: 141 GB for Llama-3-70B in bf16, nearly all of an H200's
150 GB, for an AWQ engine of about 40 GB, or a TP 2 rank's bf16 shard of 70 GB. Here each part of the
model (the embedding, one layer, the final norm with lm_head) is drawn by the same rule, in the
same order, from the same generator (weights.init_random_ over the transformers model's
parameters, whose names and shapes a meta-device copy gives), its projections quantized by
round-to-nearest under awq, this rank's shard taken under TP, and its dtype tensors dropped
before the next part is drawn (weights.engine_by_part). Peak memory is the engine (this rank's
shard) plus one part in the dtype; the engine equals the plain way's bit for bit (tests/test_random_awq.py).

No transformers model exists then, so the hf-* peers cannot run such a target (runner.validate),
and a draft that takes noise or becomes a twin (models/noise.py) is built the plain way.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..comm.group import Group
from .args import ModelArgs
from .awq import quantized_args
from .transformer import Transformer
from .weights import draw_random_, engine_by_part, engine_named, hf_layer, random_generator


@dataclass(frozen=True)
class RandomRecipe:
    """What the engine of a random-weight model is drawn from when it is built, part by part: the
    values are those loading._random_model would give the transformers model."""
    config: object  # the transformers config (LlamaConfig / Qwen2Config)
    seed: int
    dtype: torch.dtype  # the dtype and device the weights are drawn in, as _random_model would
    device: torch.device
    quant: str  # the engine's layer projections: none or awq (models/awq.py)

    def engine(self, *, dtype: torch.dtype, device="cpu", group: Group | None = None, max_seq_len: int = 4096,
               kernels: str = "torch") -> Transformer:
        """This rank's engine of the random model, as weights.engine_from_hf(quant=self.quant) builds
        it from that model, with no more than one part of the model in the dtype at a time."""
        args = self.engine_args()
        return engine_by_part(args, self._parts(args), quantize=self.quant == "awq", dtype=dtype, device=device,
                              group=group, max_seq_len=max_seq_len, kernels=kernels)

    def engine_args(self) -> ModelArgs:
        args = ModelArgs.from_hf_config(self.config)
        return quantized_args(args) if self.quant == "awq" else args

    def _parts(self, args: ModelArgs) -> Iterator[dict[str, torch.Tensor]]:
        """The engine-named parts in the transformers model's order: the embedding, layer 0, ...,
        layer L - 1, then norm and lm_head, each drawn from the one generator (init_random_'s values)."""
        gen = random_generator(self.seed, self.device)
        for _, params in itertools.groupby(hf_parameters(self.config, self.dtype), key=lambda p: hf_layer(p[0])):
            # No name here holds the drawn tensors while the part is away (they go with it).
            yield engine_named(args, self._drawn(params, gen))

    def _drawn(self, params, gen: torch.Generator) -> dict[str, torch.Tensor]:
        drawn = {name: torch.empty(shape, dtype=dt, device=self.device) for name, shape, dt in params}
        draw_random_(drawn.items(), gen)
        return drawn


def hf_parameters(config, dtype: torch.dtype) -> list[tuple[str, torch.Size, torch.dtype]]:
    """(name, shape, dtype) of the transformers model's parameters in its own order, a tied matrix
    once: the order init_random_ draws them in (loading._random_model). Read off a meta-device copy."""
    from transformers import AutoModelForCausalLM
    from transformers.initialization import no_init_weights

    with torch.device("meta"), no_init_weights():
        hf = AutoModelForCausalLM.from_config(config, dtype=dtype)
    hf.tie_weights()
    return [(name, p.shape, p.dtype) for name, p in hf.named_parameters()]
