"""Serial tree speculation (SpecExec style): each round the draft grows its tree until the best
bs-node subtree is final (all of its nodes expanded), then the target verifies that subtree and
both sides keep what it accepted; the draft keeps the KV of the surviving subtree."""
from __future__ import annotations

from .base import DecodeResult, Output, SpecSettings, Stopwatch, cache_len, draft_tree_rows
from .drafter import Drafter
from .verifier import Verifier


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings()) -> DecodeResult:
    bs, w = settings.tree_bs, settings.tree_w
    n = cache_len(prompt, max_new_tokens, settings)
    verifier, drafter = Verifier(target, n), Drafter(draft, n + draft_tree_rows(settings), draft_tree_rows(settings))
    out = Output(verifier.prefill(prompt), max_new_tokens, eos_ids)
    drafter.prefill(prompt, out.tokens[-1])
    result = DecodeResult(tokens=out.tokens)
    while not out.done:
        with Stopwatch(draft.device) as d:
            # A bs-node subtree is at most bs - 1 deep, so bs steps always close it.
            for _ in range(bs):
                if drafter.tree.subtree_closed(bs) or not drafter.step(w, w):
                    break
        tokens, parents = drafter.subtree(bs)
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify(tokens, parents)
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(d.seconds)
        result.bonus_in_tree.append(drafter.advance(emitted))
    result.draft_topk_logprobs = drafter.mean_topk_logprobs()
    return result
