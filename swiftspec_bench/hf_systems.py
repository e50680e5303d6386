"""Third-party peers run in the same process: transformers `generate` (hf-ar) and transformers
assisted generation with a constant chain of `chain_k` draft tokens (hf-assisted, the same
algorithm as our `chain`). Both return our DecodeResult; rounds are read off the target's forwards.

Rounds, as for our decoders: the prefill forward emits the first token and is not a round; every
later target forward is a round that emitted the tokens added before the next forward. Transformers'
assisted generation verifies draft tokens already in its prefill forward; when that forward emits
more than its first token, the extra tokens count as one round (timed as that forward).
"""
from __future__ import annotations

import contextlib
import time

import torch
from transformers import GenerationConfig
from transformers.utils import logging as hf_logging

from swiftspec_core.decoders.base import DecodeResult, SpecSettings
from swiftspec_core.decoders.verifier import greedy_with_margins


class ForwardRecorder:
    """Forward hooks on a model: for each forward, where its input starts in the sequence and when it
    ran (device synchronized on CUDA, so a forward's time is its own)."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.cuda = next(model.parameters()).device.type == "cuda"
        self.starts: list[int] = []  # position of the forward's first input token
        self.began: list[float] = []
        self.ended: list[float] = []
        self._next_start = 0

    def _sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def _pre(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        positions = kwargs.get("position_ids")
        if positions is not None:
            start = int(positions.reshape(-1)[0])
        else:
            cache = kwargs.get("cache", kwargs.get("past_key_values"))
            start = int(cache.get_seq_length()) if hasattr(cache, "get_seq_length") else self._next_start
        self.starts.append(start)
        self._next_start = start + (ids.shape[-1] if ids is not None else 0)
        self._sync()
        self.began.append(time.perf_counter())

    def _post(self, module, args, kwargs, output):
        self._sync()
        self.ended.append(time.perf_counter())

    def __enter__(self):
        self._handles = [self.model.register_forward_pre_hook(self._pre, with_kwargs=True),
                         self.model.register_forward_hook(self._post, with_kwargs=True)]
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()


def rounds_from_forwards(rec: ForwardRecorder, prompt_len: int, n_tokens: int, called_at: float,
                         result: DecodeResult) -> None:
    """Fill result.accepted / target_s / draft_s from the target forwards a generate call made.

    The verified length when forward i began is the prompt for i = 0 and start_i + 1 after (its input
    is the last emitted token, not yet in the cache, then the draft tokens); forward i emitted the
    growth of that length up to the next forward, the last one up to the end of the output."""
    n = len(rec.starts)
    if n == 0:
        return
    lengths = [prompt_len] + [s + 1 for s in rec.starts[1:]] + [prompt_len + n_tokens]
    for i in range(n):
        emitted = lengths[i + 1] - lengths[i]
        if i == 0:
            emitted -= 1  # the prefill's own first token
            if emitted <= 0:
                continue
        if emitted <= 0:  # a forward whose output was cut away entirely (budget / EOS): nothing to count
            continue
        result.accepted.append(emitted)
        result.target_s.append(rec.ended[i] - rec.began[i])
        result.draft_s.append(rec.began[i] - (rec.ended[i - 1] if i else called_at))


def _clean_config(**values) -> GenerationConfig:
    """A generation config with greedy search and no processors: nothing from the model's own
    generation_config.json (Qwen's repetition_penalty, sampling defaults) leaks into the run."""
    return GenerationConfig(do_sample=False, num_beams=1, temperature=1.0, top_p=1.0, repetition_penalty=1.0,
                            **values)


@contextlib.contextmanager
def _generation_configs(*pairs):
    """Temporarily give models the generation configs given as (model, config) pairs."""
    saved = [(m, m.generation_config) for m, _ in pairs]
    for model, config in pairs:
        model.generation_config = config
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        for model, config in saved:
            model.generation_config = config


def _generate(target, prompt_ids: list[int], max_new_tokens: int, eos_ids: set[int],
              assistant=None) -> tuple[list[int], list[float], ForwardRecorder, float]:
    """(new tokens, the target's top-2 margin for each, the forwards, when generate was called).

    Greedy with no logits processors: transformers' scores are the target's logits, one [1, vocab]
    row per new token (assisted generation too: the target's logits at each kept position)."""
    model = target.hf
    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids], device=device)
    eos = sorted(eos_ids)
    pad = target.tokenizer.pad_token_id
    config = _clean_config(max_new_tokens=max_new_tokens, eos_token_id=eos or None,
                           pad_token_id=pad if pad is not None else (eos[0] if eos else 0),
                           output_scores=True, return_dict_in_generate=True)
    kwargs = {"assistant_model": assistant} if assistant is not None else {}
    with torch.inference_mode(), ForwardRecorder(model) as rec:
        called_at = time.perf_counter()
        out = model.generate(ids, attention_mask=torch.ones_like(ids), generation_config=config, **kwargs)
        _, margins, _ = greedy_with_margins(torch.cat(out.scores).float())  # scores: [new tokens, vocab]
    tokens = out.sequences[0, len(prompt_ids):].tolist()
    return tokens, margins if len(margins) == len(tokens) else [], rec, called_at  # [] where they do not line up


def hf_ar(target, draft, prompt_ids: list[int], *, max_new_tokens: int, eos_ids: set[int],
          settings: SpecSettings = SpecSettings()) -> DecodeResult:
    """transformers `generate`, greedy: every decode-step forward is a round of one token."""
    with _generation_configs((target.hf, _clean_config())):
        tokens, margins, rec, called_at = _generate(target, prompt_ids, max_new_tokens, eos_ids)
    result = DecodeResult(tokens=tokens, margins=margins)
    rounds_from_forwards(rec, len(prompt_ids), len(tokens), called_at, result)
    result.draft_s = [0.0] * len(result.accepted)
    return result


def hf_assisted(target, draft, prompt_ids: list[int], *, max_new_tokens: int, eos_ids: set[int],
                settings: SpecSettings = SpecSettings()) -> DecodeResult:
    """transformers assisted generation: the draft proposes a constant chain of chain_k tokens."""
    if draft is None:
        raise ValueError("hf-assisted needs a draft model")
    if draft.hf is target.hf:
        raise ValueError("hf-assisted needs the draft loaded as its own model (forwards are counted on the target)")
    assistant_config = _clean_config(num_assistant_tokens=settings.chain_k, num_assistant_tokens_schedule="constant",
                                     assistant_confidence_threshold=0.0)
    with _generation_configs((target.hf, _clean_config()), (draft.hf, assistant_config)):
        tokens, margins, rec, called_at = _generate(target, prompt_ids, max_new_tokens, eos_ids, assistant=draft.hf)
    result = DecodeResult(tokens=tokens, margins=margins)
    rounds_from_forwards(rec, len(prompt_ids), len(tokens), called_at, result)
    return result


PEERS = {"hf-ar": hf_ar, "hf-assisted": hf_assisted}
NEEDS_DRAFT = {"hf-assisted"}
