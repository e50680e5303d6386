"""The target side of every decoder: prefill, then verify a token tree and keep what it accepts."""
from __future__ import annotations

import torch

from ..models.transformer import Transformer
from ..tree import tree_mask


class Verifier:
    def __init__(self, model: Transformer, max_len: int):
        self.model = model
        self.cache = model.new_cache(max_len)

    def prefill(self, prompt: list[int]) -> int:
        """Run the prompt; return the target's first token (the root of the first tree)."""
        n = len(prompt)
        dev = self.model.device
        mask = torch.ones(n, n, dtype=torch.bool, device=dev).tril()
        logits = self.model(torch.tensor(prompt, device=dev), torch.arange(n, device=dev),
                            torch.arange(n, device=dev), mask, self.cache)
        self.cache.length = n
        return int(logits[-1].argmax())

    def verify(self, tokens: list[int], parents: list[int]) -> tuple[list[int], list[int]]:
        """One forward over a tree (node 0 the root, parents before children, parent -1 for the root).

        Greedy: follow the child whose token is the target's argmax at its parent, as far as the
        tree goes, then add the target's own next token (the bonus). Keeps the KV of the root and
        the accepted nodes. Returns (emitted tokens: accepted then bonus, accepted node indices).
        """
        n, size = self.cache.length, len(tokens)
        depth, visible = [0] * size, [[n]]
        for i in range(1, size):
            depth[i] = depth[parents[i]] + 1
            visible.append(visible[parents[i]] + [n + i])
        dev = self.model.device
        logits = self.model(torch.tensor(tokens, device=dev), torch.tensor(depth, device=dev) + n,
                            torch.arange(n, n + size, device=dev), tree_mask(n, n + size, visible, dev),
                            self.cache)
        best = logits.argmax(-1).tolist()
        children = [{} for _ in range(size)]
        for i in range(1, size):
            children[parents[i]][tokens[i]] = i
        path, emitted = [0], []
        while True:
            emitted.append(best[path[-1]])
            child = children[path[-1]].get(emitted[-1])
            if child is None:
                break
            path.append(child)
        self.cache.keep([n + i for i in path], verified=len(path))
        return emitted, path
