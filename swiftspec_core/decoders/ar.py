"""Autoregressive decoding with the target alone: a verification of a one-node tree per token."""
from __future__ import annotations

from .base import DecodeResult, Output, SpecSettings, Stopwatch, cache_len
from .verifier import Verifier


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings()) -> DecodeResult:
    verifier = Verifier(target, cache_len(prompt, max_new_tokens, settings))
    out = Output(verifier.prefill(prompt), max_new_tokens, eos_ids)
    result = DecodeResult(tokens=out.tokens)
    while not out.done:
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify([out.tokens[-1]], [-1])
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(0.0)
    return result
