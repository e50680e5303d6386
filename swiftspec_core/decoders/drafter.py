"""The draft side: a token tree grown over the draft's KV cache, re-rooted as tokens get verified.

The cache holds the verified prefix, then one row per expanded tree node (in expansion order);
rows past those are scratch (a grafted chain's cut tokens), listed by no node and written over next.
Re-rooting keeps the rows of newly verified nodes as prefix and compacts the surviving subtree
right after them, so no draft KV entry that is still useful is ever recomputed.
"""
from __future__ import annotations

import torch

from ..models.transformer import PERSISTENT, Transformer
from ..replay import Replay, best_path
from ..graphs import make_forward
from ..kernels.persistent_forward import MAX_TREE_ROWS
from ..kernels.topk import top_k
from ..tree import TokenTree
from .graft import Grafter


def step_width(width: int, graft_len: int = 0) -> int:
    """A draft step's forward width: w leaves, a pending token, a grafted chain."""
    return width + 1 + graft_len


def staged_visible(width: int, max_tree_rows: int, graft_len: int = 0) -> int:
    """The visible rows a draft step's staged block holds a token (its forwards' max_visible): a
    step's tokens, or a node's ancestors anywhere in the tree's rows, and itself."""
    return max(step_width(width, graft_len), max_tree_rows + 1)


class Drafter:
    def __init__(self, model: Transformer, width: int, max_tree_rows: int, graft_len: int = 0,
                 graft_ngram: tuple[int, ...] = (3, 2)):
        """width: the most leaves one step expands (w; a pending token may ride along). graft_len:
        the most chain tokens a step grafts under its best leaf (graft.py; 0: no grafting), found by
        looking up the graft_ngram sizes. Built once per model and settings; `prefill` starts a request."""
        self.model, self.replay = model, None
        if model.kernels == PERSISTENT and max_tree_rows > MAX_TREE_ROWS:  # its tree masks' bits
            raise ValueError(f"the persistent forward holds trees of {MAX_TREE_ROWS} rows, not {max_tree_rows}")
        self.cache = model.new_cache(model.max_seq_len + max_tree_rows)
        # A forward holds the leaves, a pending token and a chain. A token sees at most: pending
        # tokens (only before a fresh root), or its ancestors, and itself. A step without a chain
        # runs the narrower forward (on GPU its own graphs: the chain's rows would be padding).
        visible = staged_visible(width, max_tree_rows, graft_len)
        self.forward = make_forward(model, self.cache, step_width(width, graft_len), max_visible=visible)
        self.narrow = (make_forward(model, self.cache, step_width(width), max_visible=visible) if graft_len
                       else self.forward)
        self.grafter = Grafter(graft_len, graft_ngram) if graft_len else None
        self.max_tree_rows = max_tree_rows
        self.sent: set[int] = set()  # tree nodes of the last subtree sent
        self.tree: TokenTree | None = None
        self.pending: list[int] = []  # verified tokens before the root that have no draft KV yet
        self.topk_logprobs: list[list[float]] = []  # per expansion of this request: its sorted child log-probs
        self.sent_paths: list[int] = []  # per sent tree: its best path's nodes, root included

    def prefill(self, prompt: list[int], replay: Replay | None = None) -> None:
        """Start a request: cache the prompt but its last token, which roots the tree. It needs
        nothing from the target, so under a split the draft prefills while the target does, and its
        steps can grow the tree (the first token's candidates, then theirs) before the target's
        first token arrives (`first`)."""
        self.replay, self.topk_logprobs, self.sent_paths = replay, [], []
        if len(prompt) > 1:
            self.model.prefill(prompt[:-1], self.cache)
        else:
            self.cache.restart(0)
        self.tree, self.pending, self.sent = TokenTree(prompt[-1]), [], set()
        if self.grafter:
            self.grafter.start(prompt, replay)

    def first(self, token: int, bonus_hint: bool | None = None, defer_cache: bool = False) -> tuple[int, bool]:
        """The target's first token arrived: re-root there, as after a verification that accepted
        nothing (advance). Returns the token (under replay, possibly the draft's pick) and whether
        the tree had drafted it (its subtree and KV kept)."""
        (token,), reused = self.advance([token], bonus_hint, defer_cache)
        return token, reused

    def step(self, w: int, k: int) -> int:
        """Expand the w best leaves (each gets its k best children) in one forward; returns how
        many nodes were expanded (0 when the tree's cache rows are used up).

        Verified tokens still without KV (`pending`, only ever before a fresh root) ride along at
        the front of the same forward, causally, and join the prefix. With grafting, a chain under
        the best leaf rides at the back (graft.py).
        """
        self.settle()
        tree, pending = self.tree, self.pending
        n, p = self.cache.length, len(pending)
        assert p == 0 or tree.n_rows == 0, "pending tokens come only before a fresh root"
        base = n + p  # tree rows (and the root's position) start here once pending tokens are in the prefix
        # A node at position base + depth past the rope tables cannot run: it waits, and the target
        # catches up with it or the request ends first. (A draft that deepens faster than rounds
        # accept, with grafting or a large d, reaches there near a request's end.)
        room, max_depth = self.max_tree_rows - tree.n_rows, self.model.max_seq_len - 1 - base
        leaves = tree.best_leaves(min(w, room), max_depth)
        if not leaves:
            return 0
        L = len(leaves)
        chain = (self.grafter.chain(tree, leaves[0], min(room - L, max_depth - tree.depth[leaves[0]]))
                 if self.grafter else [])
        first_row = base + tree.n_rows
        visible = [list(range(n, n + i + 1)) for i in range(p)]
        for j, leaf in enumerate(leaves):
            visible.append(list(range(n, n + p)) + [base + tree.row[a] for a in tree.ancestors(leaf)]
                           + [first_row + j])
        chain_rows = list(range(first_row + L, first_row + L + len(chain)))
        for i in range(len(chain)):  # the best leaf's path, then the chain so far
            visible.append(visible[p] + chain_rows[:i + 1])
        tokens = pending + [tree.token[l] for l in leaves] + chain
        positions = (list(range(n, n + p)) + [base + tree.depth[l] for l in leaves]
                     + [base + tree.depth[leaves[0]] + 1 + i for i in range(len(chain))])
        rows = list(range(n, n + p)) + list(range(first_row, first_row + L)) + chain_rows
        forward = self.forward if chain else self.narrow
        logits = forward(tokens, positions, rows, n, visible)[p:].float()
        # Children: the k best tokens with their log-probs, read back in one transfer.
        values, indices, lse = top_k(logits, k, fused=self.model.kernels != "torch")  # fused or persistent
        values, tokens_k = torch.stack([values - lse[:, None], indices.float()]).tolist()  # exact below 2**24
        tokens_k = [[int(t) for t in row] for row in tokens_k]
        self.cache.length, self.pending = base, []
        scores = self.replay.scores(k) if self.replay else None
        tree.expand(leaves, values[:L], tokens_k[:L], scores)
        kept = self.grafter.graft(tree, leaves[0], chain, values[L:], tokens_k[L:], scores) if chain else 0
        self.topk_logprobs += values[:L + kept]  # a cut chain token's row was never expanded; summed at the end
        return L + kept

    def mean_topk_logprobs(self) -> list[float]:
        """Mean sorted child log-probs over this request's expansions (a replay profile's scores)."""
        rows = self.topk_logprobs
        return [sum(column) / len(rows) for column in zip(*rows)]  # none without expansions

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
        parents = [where.get(self.tree.parent[i], -1) for i in nodes]
        self.sent_paths.append(len(best_path(parents)))
        return [self.tree.token[i] for i in nodes], parents

    def advance(self, emitted: list[int], bonus_hint: bool | None = None,
                defer_cache: bool = False) -> tuple[list[int], bool]:
        """Re-root at the bonus token after `emitted` (accepted tokens, then the bonus).

        Under replay (`bonus_hint` given), a hint of True makes the bonus the best child of the
        last accepted node that was not sent, where the draft has one. Returns the emitted tokens
        (with that bonus) and whether the bonus was a node of the tree (its subtree and KV kept).
        defer_cache: move the cache's kept rows only at the next step (or `settle`), so that the
        split runtime sends the next subtree (tree work alone) before any GPU work.
        """
        if bonus_hint:
            last = self.tree.follow(emitted[:-1])
            unsent = [c for c in sorted(self.tree.children[last].values()) if c not in self.sent]
            if unsent:
                emitted = emitted[:-1] + [self.tree.token[unsent[0]]]
        self.tree, r = self.tree.reroot(emitted)
        if self.grafter:
            self.grafter.extend(emitted)
        n = self.cache.length
        self.cache.keep([n + row for row in r.keep_rows], r.verified_rows, defer=defer_cache)
        self.pending = r.pending
        return emitted, r.reused

    def settle(self) -> None:
        """Move the rows the last re-root kept, if it deferred that (advance's defer_cache)."""
        self.cache.settle()
