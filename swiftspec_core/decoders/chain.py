"""Chain speculation (vLLM / TRT-LLM style, and transformers' assisted generation with a
constant chain): the draft proposes k tokens one at a time, the target verifies all k + 1."""
from __future__ import annotations

from .base import DecodeResult, Output, SpecSettings, Stopwatch, cache_len, draft_tree_rows
from .drafter import Drafter
from .verifier import Verifier


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings()) -> DecodeResult:
    n = cache_len(prompt, max_new_tokens, settings)
    verifier, drafter = Verifier(target, n), Drafter(draft, n + draft_tree_rows(settings), draft_tree_rows(settings))
    out = Output(verifier.prefill(prompt), max_new_tokens, eos_ids)
    drafter.prefill(prompt, out.tokens[-1])
    result = DecodeResult(tokens=out.tokens)
    while not out.done:
        # As transformers does: never draft past the token budget.
        k = min(settings.chain_k, out.remaining - 1)
        with Stopwatch(draft.device) as d:
            for _ in range(k):
                drafter.step(w=1, k=1)  # a chain is a tree of one leaf with one child
        tokens, parents = drafter.subtree(k + 1)
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify(tokens, parents)
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(d.seconds)
        drafter.advance(emitted)
    return result
