"""The draft side: a token tree grown over the draft's KV cache, re-rooted as tokens get verified.

The cache holds the verified prefix, then one row per expanded tree node (in expansion order).
Re-rooting keeps the rows of newly verified nodes as prefix and compacts the surviving subtree
right after them, so no draft KV entry that is still useful is ever recomputed.
"""
from __future__ import annotations

import torch

from ..models.transformer import Transformer
from ..replay import Replay
from ..runtime.graphs import make_forward
from ..tree import TokenTree


class Drafter:
    def __init__(self, model: Transformer, width: int, max_tree_rows: int):
        """width: the most leaves one step expands (w; a pending token may ride along). Built
        once per model and width; `prefill` starts a request."""
        self.model, self.replay = model, None
        self.cache = model.new_cache(model.max_seq_len + max_tree_rows)
        # A token sees at most: pending tokens (only before a fresh root), or its ancestors, and itself.
        self.forward = make_forward(model, self.cache, width + 1, max_visible=max(width + 1, max_tree_rows + 1))
        self.max_tree_rows = max_tree_rows
        self.sent: set[int] = set()  # tree nodes of the last subtree sent
        self.tree: TokenTree | None = None
        self.pending: list[int] = []  # verified tokens before the root that have no draft KV yet
        self.topk_logprob_sum: list[float] | None = None  # sorted child log-probs, summed
        self.expansions = 0

    def prefill(self, prompt: list[int], root: int, replay: Replay | None = None) -> None:
        """Start a request: cache the prompt; the tree starts at `root`, the target's first token."""
        self.replay, self.topk_logprob_sum, self.expansions = replay, None, 0
        self.model.prefill(prompt, self.cache)
        self.tree, self.pending = TokenTree(root), []

    def step(self, w: int, k: int) -> int:
        """Expand the w best leaves (each gets its k best children) in one forward; returns how
        many were expanded (0 when the tree's cache rows are used up).

        Verified tokens still without KV (`pending`, only ever before a fresh root) ride along at
        the front of the same forward, causally, and join the prefix.
        """
        tree, pending = self.tree, self.pending
        leaves = tree.best_leaves(min(w, self.max_tree_rows - tree.n_rows))
        if not leaves:
            return 0
        n, p = self.cache.length, len(pending)
        assert p == 0 or tree.n_rows == 0, "pending tokens come only before a fresh root"
        base = n + p  # tree rows start here once pending tokens are in the prefix
        first_row = base + tree.n_rows
        visible = [list(range(n, n + i + 1)) for i in range(p)]
        for j, leaf in enumerate(leaves):
            visible.append(list(range(n, n + p)) + [base + tree.row[a] for a in tree.ancestors(leaf)]
                           + [first_row + j])
        tokens = pending + [tree.token[l] for l in leaves]
        positions = list(range(n, n + p)) + [base + tree.depth[l] for l in leaves]
        rows = list(range(n, n + p)) + list(range(first_row, first_row + len(leaves)))
        logits = self.forward(tokens, positions, rows, n, visible)[p:].float()
        # Children: the k best tokens with their log-probs, read back in one transfer.
        top = logits.topk(k, dim=-1)
        values = top.values - torch.logsumexp(logits, dim=-1, keepdim=True)
        values, tokens_k = torch.stack([values, top.indices.float()]).tolist()  # exact below 2**24
        self.cache.length, self.pending = base, []
        tree.expand(leaves, values, [[int(t) for t in row] for row in tokens_k],
                    self.replay.scores(k) if self.replay else None)
        for row in values:
            self.topk_logprob_sum = [a + b for a, b in zip(self.topk_logprob_sum, row)] if self.topk_logprob_sum else row
        self.expansions += len(values)
        return len(leaves)

    def mean_topk_logprobs(self) -> list[float]:
        """Mean sorted child log-probs over this request's expansions (a replay profile's scores)."""
        if not self.expansions:
            return []
        return [v / self.expansions for v in self.topk_logprob_sum]

    def propose(self, bs: int, w: int) -> tuple[list[int], list[int]]:
        """SwiftSpec's send: grow back to at least bs nodes (steps of the w best leaves, w children
        each; fewer if the tree's rows run out), then the best bs-node subtree (see `subtree`)."""
        while len(self.tree) < bs and self.step(w, w):
            pass
        return self.subtree(bs)

    def subtree(self, bs: int) -> tuple[list[int], list[int]]:
        """The best bs-node subtree to send: (tokens, parent positions within it; root first)."""
        nodes = self.tree.best_subtree(bs)
        self.sent = set(nodes)
        where = {node: i for i, node in enumerate(nodes)}
        return [self.tree.token[i] for i in nodes], [where.get(self.tree.parent[i], -1) for i in nodes]

    def advance(self, emitted: list[int], bonus_hint: bool | None = None) -> tuple[list[int], bool]:
        """Re-root at the bonus token after `emitted` (accepted tokens, then the bonus).

        Under replay (`bonus_hint` given), a hint of True makes the bonus the best child of the
        last accepted node that was not sent, where the draft has one. Returns the emitted tokens
        (with that bonus) and whether the bonus was a node of the tree (its subtree and KV kept).
        """
        if bonus_hint:
            last = self.tree.follow(emitted[:-1])
            unsent = [c for c in sorted(self.tree.children[last].values()) if c not in self.sent]
            if unsent:
                emitted = emitted[:-1] + [self.tree.token[unsent[0]]]
        self.tree, r = self.tree.reroot(emitted)
        n = self.cache.length
        self.cache.keep([n + row for row in r.keep_rows], verified=r.verified_rows)
        self.pending = r.pending
        return emitted, r.reused
