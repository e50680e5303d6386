"""Serial tree speculation (SpecExec style): each round the draft grows its tree until the best
bs-node subtree is final (all of its nodes expanded), then the target verifies that subtree and
both sides keep what it accepted; the draft keeps the KV of the surviving subtree."""
from __future__ import annotations

from ..stopwatch import Stopwatch
from .base import DecodeResult, SpecSettings, finish, record_draft, serial_round, start, verification_width


def decode(target, draft, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
           settings: SpecSettings = SpecSettings(), replay=None) -> DecodeResult:
    bs, w = settings.tree_bs, settings.tree_w
    verifier, drafter, out = start(target, draft, prompt, max_new_tokens, eos_ids, settings,
                                   verify_width=verification_width("tree", settings), draft_width=w, graft=True,
                                   replay=replay)
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s)
    while not out.done:
        with Stopwatch(draft.device) as d:
            # Each step expands the best unexpanded node and a child ranks below its parent: bs steps expand the bs best.
            for _ in range(bs):
                if drafter.tree.subtree_closed(bs) or not drafter.step(w, w):
                    break
        result.bonus_in_tree.append(serial_round(verifier, drafter, drafter.subtree(bs), out, result, d.seconds))
    record_draft(result, drafter)
    return finish(result, verifier)
