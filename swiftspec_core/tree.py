"""The draft's token tree: nodes, scores, expansion, the verified subtree, re-rooting, masks.

Node 0 is the root: the last verified token, at depth 0. Every other node is a drafted token with
its parent, its depth and its score, the sum of draft log-probs from the root (so scores never
rise along a path and the best `bs` nodes by score form an ancestor-closed subtree). A node is
*expanded* once the draft has run it through a forward: it then owns a cache row (`row`, counted
from the end of the verified prefix) and has its best children as nodes.

Node indices grow in creation order, so a parent's index is always below its children's.
"""
from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass

import torch


@dataclass
class Reroot:
    """What re-rooting did, for the cache: rows to keep, and how many of them are now verified."""

    keep_rows: list[int]  # ascending tree rows: the expanded path nodes, then the surviving subtree
    verified_rows: int  # the first this many of keep_rows now belong to the verified prefix
    pending: list[int]  # verified tokens (before the new root) that have no draft KV yet
    reused: bool  # the new root was a node of the old tree


class TokenTree:
    def __init__(self, root_token: int):
        self.token = [root_token]
        self.parent = [-1]
        self.depth = [0]
        self.score = [0.0]
        self.row = [-1]  # cache row offset after the prefix; -1 until expanded
        self.children: list[dict[int, int]] = [{}]  # token -> node
        self.n_rows = 0
        # A heap of _order keys of nodes not yet expanded (a node expanded since it was pushed is
        # dropped when it comes up), so a draft step finds its leaves without scanning the tree.
        # Siblings rank in creation order (children come best first), so a node's key enters only
        # once its previous sibling's has come up (`pop`): the heap's best is still the best
        # unexpanded node, for one push a node expanded instead of one a child.
        self.frontier: list[tuple[float, int, int]] = [self._order(0)]
        self.in_frontier = [True]  # whether the node's key has entered the frontier
        self.expanded_keys: list[tuple[float, int, int]] = []  # _order keys of the expanded nodes, sorted

    def __len__(self) -> int:
        return len(self.token)

    def expanded(self, node: int) -> bool:
        return self.row[node] >= 0

    def _order(self, node: int):
        # Best first; a tie goes to the shallower node, then the older one: parents before children.
        return (-self.score[node], self.depth[node], node)

    def pop(self) -> tuple[float, int, int]:
        """The frontier's best key, removed; the node's next sibling, if any, enters the frontier."""
        key = heapq.heappop(self.frontier)
        after = key[2] + 1
        if after < len(self.token) and not self.in_frontier[after] and self.parent[after] == self.parent[key[2]]:
            self.in_frontier[after] = True
            heapq.heappush(self.frontier, self._order(after))
        return key

    def best_leaves(self, w: int, max_depth: int | None = None) -> list[int]:
        """The w best nodes not yet expanded (and at most max_depth deep), best first."""
        deep = len(self) if max_depth is None else max_depth
        picked, passed = [], []
        while self.frontier and len(picked) < w:
            key = self.pop()
            if self.row[key[2]] >= 0:
                continue  # expanded: it leaves the frontier for good
            (picked if self.depth[key[2]] <= deep else passed).append(key)
        for key in picked + passed:  # still unexpanded: the caller may or may not expand them
            heapq.heappush(self.frontier, key)
        return [key[2] for key in picked]

    def best_unexpanded(self) -> tuple[float, int, int] | None:
        """The _order key of the best node not yet expanded (None when all are)."""
        while self.frontier and self.row[self.frontier[0][2]] >= 0:
            self.pop()
        return self.frontier[0] if self.frontier else None

    def best_subtree(self, bs: int) -> list[int]:
        """The best ancestor-closed set of at most bs nodes, root included, in index order."""
        return sorted(heapq.nsmallest(bs, range(len(self)), key=self._order))

    def ancestors(self, node: int) -> list[int]:
        """node's strict ancestors, root first."""
        out = []
        while self.parent[node] >= 0:
            node = self.parent[node]
            out.append(node)
        return out[::-1]

    def expand(self, nodes: list[int], logprobs: list[list[float]], tokens: list[list[int]],
               scores: list[float] | None = None) -> None:
        """Give each node a cache row (in order) and children: its most likely tokens, best first,
        with their draft log-probs (so never rising: the frontier relies on it). `scores` (replay)
        replaces those log-probs, keeping the draft's own ranking of tokens."""
        for node, values, toks in zip(nodes, logprobs, tokens):
            values = scores or values
            toks = toks[:len(values)]
            self.row[node] = self.n_rows
            self.n_rows += 1
            bisect.insort(self.expanded_keys, self._order(node))
            # The children, appended together: new nodes first..first + len(toks) - 1, best first.
            first, depth, base = len(self), self.depth[node] + 1, self.score[node]
            added = range(first, first + len(toks))
            self.token += toks
            self.parent += [node] * len(toks)
            self.depth += [depth] * len(toks)
            child_scores = [base + lp for lp in values[:len(toks)]]
            self.score += child_scores
            self.row += [-1] * len(toks)
            self.children += [{} for _ in toks]
            self.children[node].update(zip(toks, added))
            if toks:  # the best child enters the frontier; its siblings follow it (pop)
                self.in_frontier += [True] + [False] * (len(toks) - 1)
                heapq.heappush(self.frontier, (-child_scores[0], depth, first))  # _order(first)

    def subtree_closed(self, bs: int) -> bool:
        """Every node of the best bs-subtree is expanded: expanding more cannot change it. Without
        a scan (a draft step asks this each time): every node ranking above the best unexpanded one
        is expanded, so the subtree is closed when at least bs expanded nodes rank above it."""
        best = self.best_unexpanded()
        return best is None or bisect.bisect_left(self.expanded_keys, best) >= bs

    def follow(self, tokens: list[int]) -> int:
        """The node reached from the root through children with these tokens."""
        node = 0
        for tok in tokens:
            if tok not in self.children[node]:
                raise ValueError(f"verified token {tok} is not a child of node {node}")
            node = self.children[node][tok]
        return node

    def reroot(self, emitted: list[int]) -> tuple["TokenTree", Reroot]:
        """Follow the verified tokens from the root; the last one (the bonus) is the new root.

        emitted: the tokens the target accepted along the tree, then its bonus token. Returns the
        tree hanging under the new root (a fresh one-node tree when the bonus was not drafted).
        """
        last = self.follow(emitted[:-1])
        path = self.ancestors(last) + [last]
        new_root = self.children[path[-1]].get(emitted[-1])
        path_rows = [self.row[n] for n in path if self.row[n] >= 0]
        pending = [self.token[n] for n in path if self.row[n] < 0]
        if new_root is None:
            return TokenTree(emitted[-1]), Reroot(path_rows, len(path_rows), pending, False)

        # Keep new_root's subtree; node order (and so row order) is preserved.
        keep, inside = [new_root], {new_root}
        for node in range(new_root + 1, len(self)):
            if self.parent[node] in inside:
                keep.append(node)
                inside.add(node)
        tree = TokenTree.__new__(TokenTree)
        index = {old: new for new, old in enumerate(keep)}
        base_depth, base_score = self.depth[new_root], self.score[new_root]
        kept_rows = sorted(self.row[n] for n in keep if self.row[n] >= 0)
        new_row = {r: i for i, r in enumerate(kept_rows)}
        tree.token = [self.token[n] for n in keep]
        tree.parent = [index.get(self.parent[n], -1) for n in keep]
        tree.parent[0] = -1
        tree.depth = [self.depth[n] - base_depth for n in keep]
        tree.score = [self.score[n] - base_score for n in keep]
        tree.row = [new_row[self.row[n]] if self.row[n] >= 0 else -1 for n in keep]
        tree.children = [{t: index[c] for t, c in self.children[n].items() if c in index} for n in keep]
        tree.n_rows = len(kept_rows)
        tree.frontier = [tree._order(i) for i in range(len(tree)) if tree.row[i] < 0]
        heapq.heapify(tree.frontier)
        tree.in_frontier = [True] * len(tree)
        tree.expanded_keys = sorted(tree._order(i) for i in range(len(tree)) if tree.row[i] >= 0)
        return tree, Reroot(path_rows + kept_rows, len(path_rows), pending, True)



def tree_mask(prefix_len: int, total_len: int, visible: list[list[int]], device="cpu") -> torch.Tensor:
    """[len(visible), total_len] bool: every row sees the prefix [0, prefix_len) and its own
    `visible` rows (its ancestors' and its own cache rows)."""
    mask = torch.zeros(len(visible), total_len, dtype=torch.bool)
    mask[:, :prefix_len] = True
    for i, rows in enumerate(visible):
        mask[i, rows] = True
    return mask.to(device)
