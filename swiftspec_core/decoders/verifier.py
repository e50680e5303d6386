"""The target side of every decoder: prefill, then verify a token tree and keep what it accepts."""
from __future__ import annotations

import torch

from ..models.transformer import Transformer
from ..stopwatch import Stopwatch
from ..replay import Replay
from ..graphs import make_forward
from ..kernels.topk import runs_kernel, top_k


class Verifier:
    def __init__(self, model: Transformer, width: int):
        """width: the most tree nodes one verification takes (the CUDA graph's batch). Built once
        per model and width (the cache and the graph live on); `prefill` starts a request."""
        self.model, self.replay = model, None
        self.prefill_s: float | None = None  # the last prefill's wall time
        # This request's emitted tokens so far (the target's own picks) and, for each, the top-2
        # margin (top-1 minus top-2 logit) of the logits that chose it: how near a tie it was.
        self.emitted: list[int] = []
        self.margins: list[float] = []
        self.runner_ups: list[int] = []  # ... and the token that came second there
        self.cache = model.new_cache(model.max_seq_len)
        self.forward = make_forward(model, self.cache, width, max_visible=width)  # a path of the tree

    @property
    def bonus_hint(self) -> bool | None:
        """Under replay: whether the last round's bonus token should come from the draft's tree."""
        return None if self.replay is None else self.replay.bonus_hint

    def first_hint(self) -> bool | None:
        """Under replay: whether the first token should come from the draft's tree (drawn as a
        round's bonus flag is: SwiftSpec's draft has grown candidates for it during the prefill)."""
        return None if self.replay is None else self.replay.draw_bonus_hint()

    def prefill(self, prompt: list[int], replay: Replay | None = None) -> int:
        """Start a request: run the prompt; return the target's first token (the first root)."""
        self.replay = replay
        with Stopwatch(self.model.device) as t:
            (first,), (margin,), (second,) = greedy_with_margins(self.model.prefill(prompt, self.cache)[None])
        self.prefill_s = t.seconds
        self.emitted, self.margins, self.runner_ups = [first], [margin], [second]
        return first

    def verify(self, tokens: list[int], parents: list[int], defer_cache: bool = False) -> tuple[list[int], list[int]]:
        """One forward over a tree (node 0 the root, parents before children, parent -1 for the root).

        Greedy: follow the child whose token is the target's argmax at its parent, as far as the
        tree goes, then add the target's own next token (the bonus); under replay, follow the
        draft's best path as far as the drawn length. Keeps the KV of the root and the accepted
        nodes. Returns (emitted tokens: accepted then bonus, accepted node indices).
        defer_cache: keep those rows only at the next verify (or `settle`), so that the split
        runtime sends the verdict before the cache's index copies and their host work.
        """
        self.cache.settle()
        if self.replay is None and tokens[0] != self.emitted[-1]:
            # Every round starts from the target's bonus; a tree rooted elsewhere would make the
            # decoder emit someone else's tokens (only replay lets the draft pick the bonus).
            raise RuntimeError(f"the tree's root {tokens[0]} is not the target's last token {self.emitted[-1]}")
        n, size = self.cache.length, len(tokens)
        depth, visible = [0] * size, [[n]]
        for i in range(1, size):
            depth[i] = depth[parents[i]] + 1
            visible.append(visible[parents[i]] + [n + i])
        logits = self.forward(tokens, [n + d for d in depth], list(range(n, n + size)), n, visible)
        best, margins, seconds = greedy_with_margins(logits, fused=self.model.kernels == "fused")
        if self.replay is not None:
            path = self.replay.accept(parents)
        else:
            children = [{} for _ in range(size)]
            for i in range(1, size):
                children[parents[i]][tokens[i]] = i
            path = [0]
            while best[path[-1]] in children[path[-1]]:
                path.append(children[path[-1]][best[path[-1]]])
        self.cache.keep([n + i for i in path], verified=len(path), defer=defer_cache)
        emitted = [tokens[i] for i in path[1:]] + [best[path[-1]]]
        self.emitted += emitted
        self.margins += [margins[i] for i in path]  # emitted[j] was chosen at node path[j], its parent
        self.runner_ups += [seconds[i] for i in path]
        return emitted, path


    def settle(self) -> None:
        """Keep the last verification's accepted rows, if it deferred that (verify's defer_cache)."""
        self.cache.settle()


def greedy_with_margins(logits: torch.Tensor, fused: bool = False) -> tuple[list[int], list[float], list[int]]:
    """logits [T, vocab] -> (argmax per row, top-1 minus top-2 logit per row, the runner-up token
    per row), read back in one transfer. The token is argmax's (the first maximum), so ties break
    as everywhere else; the runner-up is the other of the top two. fused: the top two from one
    kernel (kernels/topk.py), which ranks equal values by index as argmax does, so its first is
    the token; torch's radix select may list equal values in either order."""
    values, indices, _ = top_k(logits, 2, fused)  # [T, 2] each
    if runs_kernel(logits, 2, fused):
        best, second = indices[:, 0], indices[:, 1]
    else:
        best = logits.argmax(-1)  # [T]
        second = torch.where(indices[:, 0] == best, indices[:, 1], indices[:, 0])
    margin = values[:, 0] - values[:, 1]  # [T]
    best, margin, second = torch.stack([best.to(margin.dtype), margin, second.to(margin.dtype)]).tolist()
    return [int(b) for b in best], margin, [int(s) for s in second]  # token ids exact below 2**24
