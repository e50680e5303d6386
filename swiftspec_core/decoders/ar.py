"""Autoregressive decoding with the target alone: a verification of a one-node tree per token."""
from __future__ import annotations

from ..stopwatch import Stopwatch
from .base import DecodeResult, SpecSettings, finish, start, verification_width


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings(), replay=None) -> DecodeResult:
    verifier, _, out = start(target, None, prompt, max_new_tokens, eos_ids, settings,
                             verify_width=verification_width("ar", settings))
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s)
    while not out.done:
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify([out.tokens[-1]], [-1])
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(0.0)
    return finish(result, verifier)
