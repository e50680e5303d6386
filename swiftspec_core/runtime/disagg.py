"""SwiftSpec across two GPU groups: the target verifies round n while the draft grows round n+1.

Every rank of a group runs the same code on its shard; the link carries two fixed-size int32
messages (so a transfer never needs sizing, and NCCL can run it from a captured stream):

    VERDICT  target -> draft  [count, stop, hint, target_us, tokens[bs]]
             the tokens the target emitted (accepted, then its bonus); hint: replayed runs'
             "bonus was drafted" flag (-1 when acceptance is real)
    TREE     draft -> target  [size, parallel_us, critical_us, tokens[bs], parents[bs]]
             the best bs-node subtree, and how long the draft spent growing it

Per round on the draft: d expansions (overlapping the target's verification), wait for the
verdict, re-root, grow back to bs nodes, send the subtree. Only the last three are on the
critical path. With the same d, tokens and accepted lengths equal the lockstep decoder's.
"""
from __future__ import annotations

import time

import torch

from ..decoders.base import DecodeResult, Output, SpecSettings, Stopwatch, drafter_args, reuse
from ..decoders.drafter import Drafter
from ..decoders.verifier import Verifier

COUNT, STOP, HINT, TARGET_US = range(4)
SIZE, PARALLEL_US, CRITICAL_US = range(3)


class Messages:
    def __init__(self, bs: int, device: torch.device):
        self.bs = bs
        self.verdict = torch.zeros(4 + bs, dtype=torch.int32, device=device)
        self.tree = torch.zeros(3 + 2 * bs, dtype=torch.int32, device=device)

    def put_verdict(self, tokens: list[int], stop: bool, hint: bool | None, target_us: int = 0) -> torch.Tensor:
        head = [len(tokens), int(stop), -1 if hint is None else int(hint), target_us]
        self.verdict.copy_(torch.tensor(head + tokens + [0] * (self.bs - len(tokens)), dtype=torch.int32))
        return self.verdict

    def get_verdict(self) -> tuple[list[int], bool, bool | None, int]:
        v = self.verdict.tolist()
        return v[4: 4 + v[COUNT]], bool(v[STOP]), None if v[HINT] < 0 else bool(v[HINT]), v[TARGET_US]

    def put_tree(self, tokens: list[int], parents: list[int], parallel_s: float, critical_s: float) -> torch.Tensor:
        pad = [0] * (self.bs - len(tokens))
        head = [len(tokens), int(parallel_s * 1e6), int(critical_s * 1e6)]
        self.tree.copy_(torch.tensor(head + tokens + pad + parents + pad, dtype=torch.int32))
        return self.tree

    def get_tree(self) -> tuple[list[int], list[int], float, float]:
        v = self.tree.tolist()
        n, bs = v[SIZE], self.bs
        return v[3: 3 + n], v[3 + bs: 3 + bs + n], v[PARALLEL_US] / 1e6, v[CRITICAL_US] / 1e6


def message_device(ctx) -> torch.device:
    return ctx.device if ctx.device.type == "cuda" else torch.device("cpu")


def target_request(ctx, target, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
                   settings: SpecSettings, replay=None) -> DecodeResult:
    """The target group's side of one request (every target rank runs it)."""
    msgs = Messages(settings.tree_bs, message_device(ctx))
    verifier = reuse(target, Verifier, settings.tree_bs)
    out = Output(verifier.prefill(prompt, replay), max_new_tokens, eos_ids)
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s)
    ctx.link.send(msgs.put_verdict(out.tokens[-1:], out.done, None))
    while not out.done:
        t0 = time.perf_counter()
        ctx.link.recv(msgs.tree)
        tokens, parents, parallel_s, critical_s = msgs.get_tree()
        wait_s = time.perf_counter() - t0
        out.tokens[-1] = tokens[0]  # the root is the bonus (under replay the draft may pick it)
        with Stopwatch(target.device) as t:
            emitted, _ = verifier.verify(tokens, parents)
        result.accepted.append(out.add(emitted))
        ctx.link.send(msgs.put_verdict(emitted, out.done, verifier.bonus_hint, int(t.seconds * 1e6)))
        result.target_s.append(t.seconds)
        result.draft_s.append(critical_s)
        result.draft_parallel_s.append(parallel_s)
        result.link_wait_s.append(wait_s)
    return result


def draft_request(ctx, draft, prompt: list[int], *, settings: SpecSettings, draft_steps: int, replay=None) -> None:
    """The draft group's side of one request (every draft rank runs it)."""
    bs, w = settings.tree_bs, settings.tree_w
    msgs = Messages(bs, message_device(ctx))
    drafter = reuse(draft, Drafter, *drafter_args(settings, w, graft=True))
    ctx.link.recv(msgs.verdict)
    (first,), stop, _, _ = msgs.get_verdict()
    if stop:
        return
    with Stopwatch(draft.device) as critical:
        drafter.prefill(prompt, first, replay)
        subtree = drafter.propose(bs, w)
    parallel_s = 0.0
    while True:
        ctx.link.send(msgs.put_tree(*subtree, parallel_s, critical.seconds))
        with Stopwatch(draft.device) as parallel:
            for _ in range(draft_steps):
                drafter.step(w, w)
        parallel_s = parallel.seconds
        ctx.link.recv(msgs.verdict)
        emitted, stop, hint, _ = msgs.get_verdict()
        if stop:
            return
        with Stopwatch(draft.device) as critical:
            drafter.advance(emitted, hint)
            subtree = drafter.propose(bs, w)
