"""SwiftSpec across two GPU groups: the target verifies round n while the draft grows round n+1.

Every rank of a group runs the same code on its shard; the link (comm/pipe.py: host to host)
carries two fixed-size int32 messages, so a transfer never needs sizing:

    VERDICT  target -> draft  [count, stop, hint, target_us, tokens[bs]]
             the tokens the target emitted (accepted, then its bonus); hint: replayed runs'
             "bonus was drafted" flag (-1 when acceptance is real)
    TREE     draft -> target  [size, parallel_us, critical_us, reused, n_topk, tokens[bs], parents[bs],
                               topk[2w]]
             the best bs-node subtree, and how long the draft spent growing it; what the draft
             knows of the round just verified: its d expansions' time (overlapping that
             verification) and whether the bonus was a node of its tree (reused; -1 before the
             first round); its mean top-w child log-probs so far (float64, two int32 words each).
             After a stop verdict the draft re-roots once more and sends a last TREE of size 0,
             so the rows of a split run carry what lockstep rows carry.

Per round on the draft: d expansions (overlapping the target's verification), wait for the
verdict, re-root, grow back to bs nodes, send the subtree. Only the last three are on the
critical path. Before the first round the draft prefills the prompt while the target prefills
it and grows d expansions from the prompt's last token (the first token's candidates); the first
VERDICT carries the target's first token (and, under replay, its drawn hint), and the draft
re-roots there as after any verdict. With the same d, tokens and accepted lengths equal the
lockstep decoder's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..comm.pipe import PREFILL_SPIN_S
from ..decoders.base import DecodeResult, Output, SpecSettings, drafter_args, finish, reuse
from ..decoders.drafter import Drafter
from ..decoders.verifier import Verifier
from ..stopwatch import Stopwatch

COUNT, STOP, HINT, TARGET_US = range(4)
SIZE, PARALLEL_US, CRITICAL_US, REUSED, N_TOPK = range(5)
TREE_HEAD = 5


@dataclass
class TreeMessage:
    tokens: list[int]
    parents: list[int]
    parallel_s: float
    critical_s: float
    reused: bool | None  # None before the first round
    topk_logprobs: list[float]


class Messages:
    """The two messages' host buffers (the link carries host memory, comm/pipe.py), written and
    read through numpy views: a round's critical path crosses both, and each torch op on a few
    dozen ints costs more host time than the copy."""

    def __init__(self, bs: int, w: int):
        self.bs, self.w = bs, w
        self.verdict = torch.zeros(4 + bs, dtype=torch.int32)
        self.tree = torch.zeros(TREE_HEAD + 2 * bs + 2 * w, dtype=torch.int32)
        self._verdict, self._tree = self.verdict.numpy(), self.tree.numpy()  # views of the same memory
        self._topk = self._tree[TREE_HEAD + 2 * bs:].view(np.float64)  # [w] float64 bits, exact

    def put_verdict(self, tokens: list[int], stop: bool, hint: bool | None, target_us: int = 0) -> torch.Tensor:
        v, n = self._verdict, len(tokens)
        v[:4] = (n, int(stop), -1 if hint is None else int(hint), target_us)
        v[4: 4 + n], v[4 + n:] = tokens, 0
        return self.verdict

    def get_verdict(self) -> tuple[list[int], bool, bool | None, int]:
        v = self._verdict.tolist()
        return v[4: 4 + v[COUNT]], bool(v[STOP]), None if v[HINT] < 0 else bool(v[HINT]), v[TARGET_US]

    def put_tree(self, m: TreeMessage) -> torch.Tensor:
        t, n, bs, k = self._tree, len(m.tokens), self.bs, len(m.topk_logprobs)
        t[:TREE_HEAD] = (n, int(m.parallel_s * 1e6), int(m.critical_s * 1e6), -1 if m.reused is None else int(m.reused), k)
        body = t[TREE_HEAD: TREE_HEAD + 2 * bs]
        body[:] = 0
        body[:n], body[bs: bs + n] = m.tokens, m.parents
        self._topk[:k], self._topk[k:] = m.topk_logprobs, 0.0
        return self.tree

    def get_tree(self) -> TreeMessage:
        head = self._tree[:TREE_HEAD].tolist()
        n, bs = head[SIZE], self.bs
        body = self._tree[TREE_HEAD: TREE_HEAD + 2 * bs].tolist()
        return TreeMessage(body[:n], body[bs: bs + n], head[PARALLEL_US] / 1e6, head[CRITICAL_US] / 1e6,
                           None if head[REUSED] < 0 else bool(head[REUSED]), self._topk[: head[N_TOPK]].tolist())


def target_request(ctx, target, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
                   settings: SpecSettings, replay=None) -> DecodeResult:
    """The target group's side of one request (every target rank runs it)."""
    msgs = Messages(settings.tree_bs, settings.tree_w)
    verifier = reuse(target, Verifier, settings.tree_bs)
    out = Output(verifier.prefill(prompt, replay), max_new_tokens, eos_ids)
    result = DecodeResult(tokens=out.tokens, prefill_s=verifier.prefill_s)
    ctx.link.send(msgs.put_verdict(out.tokens[-1:], out.done, verifier.first_hint()))

    def receive() -> tuple[TreeMessage, float]:
        t0 = time.perf_counter()
        ctx.link.recv(msgs.tree)
        return msgs.get_tree(), time.perf_counter() - t0

    if out.done:
        return finish(result, verifier)
    tree, wait_s = receive()
    while True:
        if replay is not None:  # the draft may pick the bonus (Drafter.advance); else Verifier checks the root
            out.tokens[-1] = tree.tokens[0]
        with Stopwatch(target.device) as t:  # the cache keeps the accepted rows after the send
            emitted, _ = verifier.verify(tree.tokens, tree.parents, defer_cache=True)
        result.accepted.append(out.add(emitted))
        ctx.link.send(msgs.put_verdict(emitted, out.done, verifier.bonus_hint, int(t.seconds * 1e6)))
        verifier.settle()  # while the draft re-roots
        result.target_s.append(t.seconds)
        result.draft_s.append(tree.critical_s)
        result.link_wait_s.append(wait_s)
        tree, wait_s = receive()  # the next tree, or after a stop the draft's last report
        result.draft_parallel_s.append(tree.parallel_s)
        result.bonus_in_tree.append(tree.reused)
        if out.done:
            result.draft_topk_logprobs = tree.topk_logprobs
            return finish(result, verifier)


def draft_request(ctx, draft, prompt: list[int], *, settings: SpecSettings, draft_steps: int, replay=None) -> None:
    """The draft group's side of one request (every draft rank runs it)."""
    bs, w = settings.tree_bs, settings.tree_w
    msgs = Messages(bs, w)
    drafter = reuse(draft, Drafter, *drafter_args(settings, w, graft=True))
    drafter.prefill(prompt, replay)  # while the target prefills, and the first d steps too
    for _ in range(draft_steps):
        drafter.step(w, w)
    ctx.link.recv(msgs.verdict, spin_s=PREFILL_SPIN_S)  # through the target's prefill (pipe.py)
    (first,), stop, hint, _ = msgs.get_verdict()
    if stop:
        return
    with Stopwatch(draft.device) as critical:
        drafter.first(first, hint, defer_cache=True)
        subtree = drafter.propose(bs, w)
    parallel_s, reused = 0.0, None
    while True:
        ctx.link.send(msgs.put_tree(TreeMessage(*subtree, parallel_s, critical.seconds, reused,
                                                drafter.mean_topk_logprobs())))
        with Stopwatch(draft.device) as parallel:
            for _ in range(draft_steps):
                drafter.step(w, w)
        parallel_s = parallel.seconds
        ctx.link.recv(msgs.verdict)
        emitted, stop, hint, _ = msgs.get_verdict()
        with Stopwatch(draft.device) as critical:  # the cache's rows move at the next step, after the send
            _, reused = drafter.advance(emitted, hint, defer_cache=True)
            if not stop:
                subtree = drafter.propose(bs, w)
        if stop:
            ctx.link.send(msgs.put_tree(TreeMessage([], [], parallel_s, critical.seconds, reused,
                                                    drafter.mean_topk_logprobs())))
            return
