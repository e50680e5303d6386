"""SwiftSpec in lockstep: the draft grows its tree while the target verifies the previous subtree.

One round, as the multi-GPU runtime runs it with the two groups side by side:

    target: verify the subtree S sent last round ----------------> send the emitted tokens
    draft:  d expansions of its w best leaves (while S is checked) -> receive, re-root, grow back
                                                                      to bs nodes, send the new S

The first round starts the same way: the draft grows d expansions from the prompt's last token
(while the target prefills), then re-roots at the target's first token.

Here both sides run in one process, one after the other; the draft does exactly d expansions per
round, so the tokens and accepted lengths equal the parallel run's. d is settings.draft_steps,
else measured once per engine pair by a warm-up request (run_draft_steps), by the same rule as
the split workers use (base.measure_draft_steps): about as many expansions as fit under one
verification, which keeps the draft off the critical path.
"""
from __future__ import annotations

from dataclasses import replace

from ..stopwatch import Stopwatch
from .base import (WARMUP_PROMPT, WARMUP_TOKENS, DecodeResult, SpecSettings, finish,
                   measure_draft_steps, record_draft, start, verification_width)


def run_draft_steps(target, draft, settings: SpecSettings) -> int:
    """d for this engine pair and tree shape: as given, else measured on the first call by a
    warm-up request with d = 1 and kept on the target engine for every later request."""
    if settings.draft_steps:
        return settings.draft_steps
    measured = target.__dict__.setdefault("_draft_steps", {})
    key = (id(draft), settings.tree_bs, settings.tree_w)
    if key not in measured:
        warmup = decode(target, draft, WARMUP_PROMPT, max_new_tokens=WARMUP_TOKENS, eos_ids=set(),
                        settings=replace(settings, draft_steps=1))
        measured[key] = measure_draft_steps(warmup)
    return measured[key]


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings(), replay=None) -> DecodeResult:
    bs, w = settings.tree_bs, settings.tree_w
    steps = run_draft_steps(target, draft, settings)  # before start(): a warm-up reuses the same sides
    verifier, drafter, out = start(target, draft, prompt, max_new_tokens, eos_ids, settings,
                                   verify_width=verification_width("swiftspec", settings),
                                   draft_width=w, graft=True, early_steps=steps, replay=replay)
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s, draft_steps=steps)
    with Stopwatch(draft.device) as grow:
        subtree = drafter.propose(bs, w)
    critical_s = grow.seconds
    while not out.done:
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify(*subtree)
        with Stopwatch(draft.device) as parallel:  # in parallel with the verification above
            for _ in range(steps):
                drafter.step(w, w)
        with Stopwatch(draft.device) as reroot:
            emitted, reused = drafter.advance(emitted, verifier.bonus_hint)
        result.accepted.append(out.add(emitted))
        result.target_s.append(t.seconds)
        result.draft_s.append(critical_s)
        result.draft_parallel_s.append(parallel.seconds)
        result.bonus_in_tree.append(reused)
        if out.done:
            break
        with Stopwatch(draft.device) as grow:
            subtree = drafter.propose(bs, w)
        critical_s = reroot.seconds + grow.seconds
    record_draft(result, drafter)
    return finish(result, verifier)
