"""The draft of losslessness runs: the target's twin, and the twin perturbed by relative noise.

With `--weights random` a draft that names the target's preset and seed (or one of its shape) has
the target's exact weights (so it accepts every drafted token); noise makes it propose wrong
tokens too, so a losslessness pass also covers rejected branches and re-rooting. Under
`--quant awq` the twin is the AWQ target as it computes: its layer projections quantized as the
target's and dequantized to the draft's dtype (awq_twin_), so draft = target still accepts
nearly every token and the pass checks long accepted paths through the AWQ kernels."""
from __future__ import annotations

import torch

from ..errors import UserError

NOISE_SEED_OFFSET = 7919  # the noise's generator is seeded apart from the weights' own


def check_draft_noise(noise: float, weights: str, target: str, draft: str) -> None:
    """Before loading: noise needs random weights and a draft of the target's shape."""
    from .presets import PRESETS

    if not noise >= 0 or noise == float("inf"):  # NaN compares false: it would draw a draft of NaNs
        raise UserError(f"--draft-noise must be a finite number of at least 0 (got {noise})")
    if not noise:
        return
    if weights != "random" and not (PRESETS.get(target) and PRESETS[target].is_tiny):
        raise UserError("--draft-noise needs --weights random (the draft is the target's weights plus noise)")
    if target in PRESETS and draft in PRESETS and PRESETS[target].hf_config().to_dict() != PRESETS[draft].hf_config().to_dict():
        raise UserError(f"--draft-noise needs a draft of the target's shape ({draft} is not {target}'s)")


def perturb(hf, noise: float, seed: int) -> None:
    """In place: every weight w becomes w + noise * rms(w) * N(0, 1), seeded, so every process
    that loads the draft builds the same perturbed one. Given the target's preset and seed, the
    draft starts from the target's exact weights (same_weights checks it where both are loaded)."""
    params = dict(hf.named_parameters())
    device = next(iter(params.values())).device
    gen = torch.Generator(device=device).manual_seed(seed + NOISE_SEED_OFFSET)
    with torch.no_grad():
        for name in sorted(params):
            w = params[name]
            rms = w.float().pow(2).mean().sqrt()
            w.copy_(w.float() + torch.randn(w.shape, generator=gen, device=device) * (noise * rms))


def same_weights(a_hf, b_hf) -> bool:
    """Whether two models hold equal weights (the draft = target runs rely on it)."""
    a, b = dict(a_hf.named_parameters()), dict(b_hf.named_parameters())
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def _shape(config) -> dict:
    """A transformers config without its dtype (a random AWQ target's config has none: random_parts.py)."""
    return {k: v for k, v in config.to_dict().items() if k not in ("dtype", "torch_dtype")}


def is_twin(target, draft) -> bool:
    """Whether the loaded draft holds the target's weights: both random, one shape (and one seed:
    a run loads both with its --seed)."""
    return target.weights == draft.weights == "random" and _shape(draft.config) == _shape(target.config)


def is_awq_twin(target, draft, quant: str) -> bool:
    """Whether the draft is to be the AWQ target's twin (awq_twin_): a twin of a target run under
    --quant awq. The run's process (draft_from_target) and its workers (WorkerPlan) both ask here."""
    return quant == "awq" and is_twin(target, draft)


def awq_twin_(hf) -> None:
    """In place: the weights an AWQ engine of this transformers model quantizes (awq.is_quantized,
    as awq.quantize_state picks them) become what that engine computes with: quantized at
    group_for's group and dequantized to their dtype. Through the engine's own entries (views of
    the model's tensors once fuse_projections made them blocks), so the fused wqkv and w_gate_up are
    rounded as the target's are."""
    from .awq import dequantize, group_for, is_quantized, quantize
    from .weights import fuse_projections, state_from_hf

    fuse_projections(hf)
    args, state = state_from_hf(hf)
    group = group_for(args)
    with torch.no_grad():
        for name, w in state.items():
            if is_quantized(name):
                w.copy_(dequantize(quantize(w, group), w.dtype))


def draft_from_target(target, draft, noise: float, seed: int, quant: str = "none") -> None:
    """Where the draft is meant to be the target's weights (is_twin): check they are equal (unless
    the target was never built as a transformers model: an AWQ engine drawn layer by layer,
    random_parts.py), make it the AWQ target's twin under quant="awq" (awq_twin_); then add the
    noise, which needs such a draft. A draft on the meta device (a run whose engines all live in
    workers, which do this to their own copies: WorkerPlan) is only checked."""
    if noise and not is_twin(target, draft):
        raise UserError("--draft-noise needs random weights and a draft of the target's shape")
    if draft.hf is not None and next(draft.hf.parameters()).is_meta:
        return
    if is_twin(target, draft):
        if target.hf is not None and not same_weights(target.hf, draft.hf):
            raise RuntimeError(f"draft {draft.name} and target {target.name} have one shape and seed, "
                               "but not equal weights")
        if is_awq_twin(target, draft, quant):
            awq_twin_(draft.hf)
    if noise:
        perturb(draft.hf, noise, seed)
