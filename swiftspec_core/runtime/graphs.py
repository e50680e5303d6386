"""Model forwards at one fixed width, captured once as a CUDA graph on GPU.

A verification pads its tree to bs tokens and a draft step its leaves to w (+1 for a pending
token); the mask always spans the whole cache. So one graph per (model, width) serves every
tree shape, and a round costs one replay instead of hundreds of kernel launches from Python.
Padding tokens write the cache's scratch row and attend only to it.
"""
from __future__ import annotations

import torch

from ..cache import KVCache
from ..models.transformer import Transformer
from ..tree import tree_mask


class ExactForward:
    """CPU: run exactly the tokens given (no padding, no graph)."""

    def __init__(self, model: Transformer, cache: KVCache):
        self.model, self.cache = model, cache

    def __call__(self, tokens: list[int], positions: list[int], rows: list[int], prefix_len: int,
                 visible: list[list[int]]) -> torch.Tensor:
        """Each token i sees the cache rows [0, prefix_len) and visible[i]. -> [T, vocab] logits."""
        dev = self.model.device
        ids = torch.tensor([tokens, positions, rows], device=dev)
        return self.model(ids[0], ids[1], ids[2], tree_mask(prefix_len, max(rows) + 1, visible, dev), self.cache)


class PaddedForward:
    """Fixed-width forward; replays a captured CUDA graph when `graph` is set.

    Inputs are staged in pinned host memory and reach the device in two copies (ids and mask),
    so a step costs the host a few microseconds of bookkeeping, not a dozen small transfers."""

    def __init__(self, model: Transformer, cache: KVCache, width: int, graph: bool):
        self.model, self.cache, self.width = model, cache, width
        dev, pin = model.device, model.device.type == "cuda"
        self.host_ids = torch.zeros(3, width, dtype=torch.long, pin_memory=pin)  # tokens, positions, rows
        self.host_mask = torch.zeros(width, cache.rows, dtype=torch.bool, pin_memory=pin)
        self.ids = torch.zeros(3, width, dtype=torch.long, device=dev)
        self.mask = torch.zeros(width, cache.rows, dtype=torch.bool, device=dev)
        self.ids[2].fill_(cache.scratch_row)
        self.mask[:, cache.scratch_row] = True
        self.graph = None
        if graph:
            self._capture()

    def _capture(self) -> None:
        # Warm up on a side stream (cuBLAS, NCCL and inductor set themselves up), then capture one
        # forward. The inputs point at the scratch row, so these forwards change nothing that matters.
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self._run()
        torch.cuda.current_stream().wait_stream(stream)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self._run()

    def _run(self) -> torch.Tensor:
        return self.model(self.ids[0], self.ids[1], self.ids[2], self.mask, self.cache)

    def __call__(self, tokens: list[int], positions: list[int], rows: list[int], prefix_len: int,
                 visible: list[list[int]]) -> torch.Tensor:
        """As ExactForward; T = len(tokens) <= width, the rest is padding."""
        T, scratch = len(tokens), self.cache.scratch_row
        if T > self.width:
            raise ValueError(f"{T} tokens do not fit a forward of width {self.width}")
        pad = self.width - T
        self.host_ids.copy_(torch.tensor([tokens + [0] * pad, positions + [0] * pad, rows + [scratch] * pad]))
        mask = self.host_mask
        mask.zero_()
        mask[:T, :prefix_len] = True
        for i, cols in enumerate(visible):
            mask[i, cols] = True
        mask[T:, scratch] = True
        self.ids.copy_(self.host_ids, non_blocking=True)
        self.mask.copy_(mask, non_blocking=True)
        if self.graph is None:
            return self._run()[:T]
        self.graph.replay()
        return self.logits[:T]


def make_forward(model: Transformer, cache: KVCache, width: int):
    """The forward a decoder should use: exact on CPU, a width-`width` CUDA graph on GPU."""
    if model.device.type != "cuda":
        return ExactForward(model, cache)
    return PaddedForward(model, cache, width, graph=True)
