"""Chain grafting: tokens from the request's own text, grown under the draft tree's best leaf in the
same forward that expands the step's leaves (issue 9; prompt lookup decoding's idea, on a tree).

A step looks up the best leaf's path (the verified text, then the tree path to the leaf) in an
n-gram index of the verified text (ngram.py); the tokens that followed the latest earlier
occurrence of its last n tokens ride in the forward as a chain under the leaf, each attending to its
ancestors. The forward's logits score every chain node as an expansion would: the chain is kept up
to its first token that is not among its parent's k children (the parent's expansion has just
created them), so every kept node is exactly the child a plain expansion creates, with the same
score, and it is expanded at once from its own logits, owning the cache row the forward wrote for
it. Rows written for cut tokens lie past the tree's rows: no node lists them, the next step writes
over them.

Under replay (random weights: the text never repeats, so the lookup would never fire) a step fires
with the recorded probability and keeps a recorded number of nodes (replay.py): the chain it proposes
is as long as a lookup's could be (the leaf's token repeated: any tokens do), so the forward's width
and cost are a real step's, and the kept nodes follow the best children, the path the replayed
verification accepts along.
"""
from __future__ import annotations

from ..ngram import NgramIndex
from ..replay import Replay
from ..tree import TokenTree


class Grafter:
    def __init__(self, length: int, sizes: tuple[int, ...]):
        """length: the most tokens one graft proposes; sizes: the n-gram sizes looked up."""
        if length < 1:
            raise ValueError(f"a graft needs at least one token (got {length})")
        self.length, self.sizes = length, tuple(sizes)
        self.start([])

    def start(self, verified: list[int], replay: Replay | None = None) -> None:
        """A new request: index its verified text (the prompt and the first token), zero the counts.
        Under a replay whose profile recorded grafts, steps graft what it draws."""
        self.replay = replay if replay is not None and replay.profile.graft_fire is not None else None
        self.replay_keep = 0  # under replay: the nodes the step's drawn graft keeps
        self.index = NgramIndex(self.sizes)
        self.index.extend(verified)
        # This request's draft steps, the steps whose best leaf matched, chain tokens proposed and kept.
        self.steps = self.fired = self.proposed = self.kept = 0
        self.kept_lengths: list[int] = []  # per firing: the chain nodes kept (0 where its first was cut)

    def extend(self, emitted: list[int]) -> None:
        """Tokens the target emitted (accepted, then the bonus) join the text."""
        self.index.extend(emitted)

    def chain(self, tree: TokenTree, leaf: int, room: int) -> list[int]:
        """The tokens to graft under `leaf` (at most `room`): what followed the latest earlier
        occurrence of its path's last n tokens; [] when none occurred (under replay: as drawn)."""
        self.steps += 1
        chain = self._lookup(tree, leaf, room) if self.replay is None else self._replayed_chain(tree, leaf, room)
        self.fired += bool(chain)
        self.proposed += len(chain)
        return chain

    def _lookup(self, tree: TokenTree, leaf: int, room: int) -> list[int]:
        n, text = max(self.sizes), self.index.text
        tail, node = [], leaf
        while node > 0 and len(tail) < n:  # the path below the root, from the leaf up
            tail.append(tree.token[node])
            node = tree.parent[node]
        context = text[max(0, len(text) - (n - len(tail))):] + tail[::-1]  # the root is text[-1]
        return self.index.continuation(context, min(self.length, room))

    def _replayed_chain(self, tree: TokenTree, leaf: int, room: int) -> list[int]:
        keep = self.replay.graft()
        if keep is None:
            return []
        chain = [tree.token[leaf]] * min(self.length, room)
        self.replay_keep = min(keep, len(chain))
        return chain

    def graft(self, tree: TokenTree, leaf: int, chain: list[int], logprobs: list[list[float]],
              tokens: list[list[int]], scores: list[float] | None = None) -> int:
        """Keep the chain under `leaf` (expanded already) up to its first token that its parent's
        expansion did not create (under replay: the drawn number of nodes, each its parent's best
        child, the first created); expand each kept node from its own row of the forward's top-k
        (`logprobs`, `tokens`; `scores` as in TokenTree.expand). Returns how many were kept."""
        node, kept = leaf, 0
        for tok, values, toks in zip(chain, logprobs, tokens):
            if self.replay is not None:
                child = min(tree.children[node].values()) if kept < self.replay_keep else None
            else:
                child = tree.children[node].get(tok)
            if child is None:
                break
            tree.expand([child], [values], [toks], scores)
            node, kept = child, kept + 1
        self.kept += kept
        self.kept_lengths.append(kept)
        return kept
