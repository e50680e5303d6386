"""Chain speculation (vLLM / TRT-LLM style, and transformers' assisted generation with a
constant chain): the draft proposes k tokens one at a time, the target verifies all k + 1."""
from __future__ import annotations

from ..stopwatch import Stopwatch
from .base import DecodeResult, SpecSettings, finish, serial_round, start, verification_width


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings(), replay=None) -> DecodeResult:
    verifier, drafter, out = start(target, draft, prompt, max_new_tokens, eos_ids, settings,
                                   verify_width=verification_width("chain", settings), draft_width=1, replay=replay)
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s)
    while not out.done:
        # As transformers does: never draft past the token budget.
        k = min(settings.chain_k, out.remaining - 1)
        with Stopwatch(draft.device) as d:
            for _ in range(k):
                drafter.step(w=1, k=1)  # a chain is a tree of one leaf with one child
        serial_round(verifier, drafter, drafter.subtree(k + 1), out, result, d.seconds)
    return finish(result, verifier)
