"""SwiftSpec in lockstep: the draft grows its tree while the target verifies the previous subtree.

One round, as the multi-GPU runtime runs it with the two groups side by side:

    target: verify the subtree S sent last round ----------------> send the emitted tokens
    draft:  d expansions of its w best leaves (while S is checked) -> receive, re-root, grow back
                                                                      to bs nodes, send the new S

Here both sides run in one process, one after the other; the draft does exactly d expansions per
round, so the tokens and accepted lengths equal the parallel run's. d defaults to
floor(t_target / t_draft), measured on the first round: as many expansions as fit under one
verification, which keeps the draft off the critical path.
"""
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
    result = DecodeResult(tokens=out.tokens, draft_steps=settings.draft_steps or 0)
    with Stopwatch(draft.device) as critical:
        drafter.grow_to(bs, w, w)
    subtree = drafter.subtree(bs)
    while not out.done:
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify(*subtree)
        if not result.draft_steps:
            with Stopwatch(draft.device) as one_step:
                drafter.step(w, w)
            result.draft_steps = max(1, int(t.seconds // max(one_step.seconds, 1e-9)))
            steps_left = result.draft_steps - 1
        else:
            steps_left = result.draft_steps
        for _ in range(steps_left):  # in parallel with the verification above
            drafter.step(w, w)
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(critical.seconds)
        if out.done:
            break
        with Stopwatch(draft.device) as critical:
            result.bonus_in_tree.append(drafter.advance(emitted))
            drafter.grow_to(bs, w, w)
            subtree = drafter.subtree(bs)
    result.draft_topk_logprobs = drafter.mean_topk_logprobs()
    return result
