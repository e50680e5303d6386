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


class ExactForward:
    """CPU: run exactly the tokens given (no padding, no graph)."""

    def __init__(self, model: Transformer, cache: KVCache):
        self.model, self.cache = model, cache

    def __call__(self, tokens, positions, rows, mask) -> torch.Tensor:
        return self.model(tokens, positions, rows, mask, self.cache)


class PaddedForward:
    """Fixed-width forward; replays a captured CUDA graph when `graph` is set."""

    def __init__(self, model: Transformer, cache: KVCache, width: int, graph: bool):
        self.model, self.cache, self.width = model, cache, width
        dev = model.device
        self.tokens = torch.zeros(width, dtype=torch.long, device=dev)
        self.positions = torch.zeros(width, dtype=torch.long, device=dev)
        self.rows = torch.full((width,), cache.scratch_row, dtype=torch.long, device=dev)
        self.mask = torch.zeros(width, cache.rows, dtype=torch.bool, device=dev)
        self.mask[:, cache.scratch_row] = True
        self.graph = None
        if graph:
            self._capture()

    def _capture(self) -> None:
        # Warm up on a side stream (cuBLAS / NCCL set themselves up), then capture one forward.
        # The caller's cache rows are scratch until a forward's result is kept, and the inputs
        # point at the scratch row, so these forwards change nothing that matters.
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
        return self.model(self.tokens, self.positions, self.rows, self.mask, self.cache)

    def __call__(self, tokens, positions, rows, mask) -> torch.Tensor:
        """tokens, positions, rows: [T] (T <= width); mask: [T, L] with L <= cache rows."""
        T, L = mask.shape
        if T > self.width:
            raise ValueError(f"{T} tokens do not fit a forward of width {self.width}")
        self.tokens[:T].copy_(tokens, non_blocking=True)
        self.positions[:T].copy_(positions, non_blocking=True)
        self.rows[:T].copy_(rows, non_blocking=True)
        self.rows[T:].fill_(self.cache.scratch_row)
        self.mask.zero_()
        self.mask[:T, :L].copy_(mask, non_blocking=True)
        self.mask[T:, self.cache.scratch_row] = True
        if self.graph is None:
            return self._run()[:T]
        self.graph.replay()
        return self.logits[:T]


def make_forward(model: Transformer, cache: KVCache, width: int):
    """The forward a decoder should use: exact on CPU, a width-`width` CUDA graph on GPU."""
    if model.device.type != "cuda":
        return ExactForward(model, cache)
    return PaddedForward(model, cache, width, graph=True)
