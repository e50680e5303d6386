"""SwiftSpec in lockstep: the draft grows its tree while the target verifies the previous subtree.

One round, as the multi-GPU runtime runs it with the two groups side by side:

    target: verify the subtree S sent last round ----------------> send the emitted tokens
    draft:  d expansions of its w best leaves (while S is checked) -> receive, re-root, grow back
                                                                      to bs nodes, send the new S

Here both sides run in one process, one after the other; the draft does exactly d expansions per
round, so the tokens and accepted lengths equal the parallel run's. d defaults to
round(t_target / t_draft), measured on the first round (base.draft_steps_for): about as many
expansions as fit under one verification, which keeps the draft off the critical path.
"""
from __future__ import annotations

from .base import DecodeResult, SpecSettings, Stopwatch, draft_steps_for, start


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings(), replay=None) -> DecodeResult:
    bs, w = settings.tree_bs, settings.tree_w
    verifier, drafter, out = start(target, draft, prompt, max_new_tokens, eos_ids, settings,
                                   verify_width=bs, draft_width=w, graft=True, replay=replay)
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s, draft_steps=settings.draft_steps or 0)
    with Stopwatch(draft.device) as grow:
        subtree = drafter.propose(bs, w)
    critical_s = grow.seconds
    while not out.done:
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify(*subtree)
        steps = result.draft_steps
        if not steps:  # measure d on the first round: one draft step against the verification
            with Stopwatch(draft.device) as one_step:
                drafter.step(w, w)
            result.draft_steps = draft_steps_for(t.seconds, one_step.seconds)
            steps = result.draft_steps - 1
        for _ in range(steps):  # in parallel with the verification above
            drafter.step(w, w)
        with Stopwatch(draft.device) as reroot:
            emitted, reused = drafter.advance(emitted, verifier.bonus_hint)
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(critical_s)
        result.bonus_in_tree.append(reused)
        if out.done:
            break
        with Stopwatch(draft.device) as grow:
            subtree = drafter.propose(bs, w)
        critical_s = reroot.seconds + grow.seconds
    result.draft_topk_logprobs = drafter.mean_topk_logprobs()
    return result
