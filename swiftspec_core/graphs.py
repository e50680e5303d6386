"""Model forwards at one fixed width, captured as CUDA graphs on GPU (one per attention span).

A verification pads its tree to bs tokens and a draft step its leaves to w (+1 for a pending
token). So a handful of graphs per (model, width) serves every tree shape, and a step costs one
replay instead of hundreds of kernel launches from Python.

What the host sends per call is small and independent of the cache length: one int64 block
[width, 4 + max_visible] of (token, position, cache row, prefix length, visible rows...). The
graph builds the [width, L] attention mask from it on the device: token i sees the rows
[0, prefix_i) and its listed rows. L, the rows attended, is the smallest span of
SPAN_MIN * 2^k (or the whole cache) holding every row in use, so a short request does not pay
for reading a cache sized for the longest one. Padding tokens write the cache's scratch row
(outside every span but the whole cache, and read by nobody) and see only row 0.
"""
from __future__ import annotations

import gc

import torch

from .cache import KVCache
from .models.transformer import PERSISTENT, Transformer
from . import staged
from .staged import POSITION, PREFIX, ROW, TOKEN, VISIBLE
from .tree import tree_mask

SPAN_MIN = 512


def capture(run, warmups: int = 2):
    """Run `run()` `warmups` times on a side stream (cuBLAS, NCCL and inductor set themselves
    up), then capture one call as a CUDA graph. -> (graph, the captured call's output)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmups):
            run()
    torch.cuda.current_stream().wait_stream(stream)
    # No garbage collection inside the capture: a collection there can free an older forward's
    # graphs (models and their sides form reference cycles), and destroying a graph while a stream
    # captures invalidates the capture (seen on 2xH200: the third engine built in one test process
    # failed its first capture, "operation failed due to a previous error during capture").
    gc.collect()
    gc.disable()
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = run()
    finally:
        gc.enable()
    return graph, out


def spans(rows: int) -> list[int]:
    """Attention lengths to capture for a cache of `rows` rows: 512, 1024, ... below it, and all."""
    out, s = [], SPAN_MIN
    while s < rows:
        out.append(s)
        s *= 2
    return out + [rows]


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
    """Fixed-width forward; replays a captured CUDA graph per span when `graph` is set.

    max_visible: the most rows one token lists besides the prefix (its ancestors, itself)."""

    def __init__(self, model: Transformer, cache: KVCache, width: int, max_visible: int, graph: bool):
        self.model, self.cache, self.width, self.max_visible = model, cache, width, max_visible
        dev, pin = model.device, model.device.type == "cuda"
        self.host = torch.zeros(width, VISIBLE + max_visible, dtype=torch.long, pin_memory=pin)
        staged.write(self.host.numpy(), [], [], [], 0, [], cache.scratch_row)  # all padding
        self.inputs = self.host.to(dev, copy=True)
        self.columns = torch.arange(cache.rows, device=dev)
        self.spans = spans(cache.rows)
        # Recorded after each forward, which starts by copying the staged block to the device (in
        # a graph, as its first node: the copy costs the host no call of its own): the host waits
        # on it before writing the block again (the decoders read each step's logits back anyway).
        self.staged = torch.cuda.Event() if pin else None
        self.persistent = None  # with use_kernels("persistent"): the forward's kernel and buffers
        if model.kernels == PERSISTENT:
            from .kernels.persistent_forward import PersistentLayers, is_target
            from .kernels.persistent_target import PersistentTarget

            self.persistent = (PersistentTarget if is_target(model.args) else PersistentLayers)(model, cache, width)
        # span -> (graph, its logits). The captures run on padding inputs: they change nothing.
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = (
            {span: capture(lambda span=span: self._run(span)) for span in self.spans} if graph else {})

    def span_for(self, rows_used: int) -> int:
        """The smallest captured span holding cache rows [0, rows_used)."""
        return next(s for s in self.spans if s >= rows_used)

    def _run(self, span: int) -> torch.Tensor:
        self.inputs.copy_(self.host, non_blocking=True)  # captured: each replay reads the host block anew
        x = self.inputs  # [width, 4 + max_visible]
        if self.persistent is not None:
            return self.persistent(x, span)
        if self.model.kernels == "fused":  # the kernels read the block itself, no mask
            from .kernels.forward import fused_forward

            return fused_forward(self.model, x, span, self.cache)
        mask = self.columns[None, :span] < x[:, PREFIX, None]  # [width, span]: the prefix
        mask.scatter_(1, x[:, VISIBLE:], True)  # and each token's listed rows
        return self.model(x[:, TOKEN], x[:, POSITION], x[:, ROW], mask, self.cache)

    def __call__(self, tokens: list[int], positions: list[int], rows: list[int], prefix_len: int,
                 visible: list[list[int]]) -> torch.Tensor:
        """As ExactForward; T = len(tokens) <= width, the rest is padding."""
        T = len(tokens)
        if T > self.width:
            raise ValueError(f"{T} tokens do not fit a forward of width {self.width}")
        if max(map(len, visible)) > self.max_visible:
            raise ValueError(f"a token sees {max(map(len, visible))} rows beyond the prefix; "
                             f"this forward holds {self.max_visible}")
        span = self.span_for(max(max(rows), prefix_len - 1, *(max(v) for v in visible)) + 1)
        if self.staged is not None:
            self.staged.synchronize()
        staged.write(self.host.numpy(), tokens, positions, rows, prefix_len, visible, self.cache.scratch_row)
        if span in self.graphs:
            graph, logits = self.graphs[span]
            graph.replay()
        else:
            logits = self._run(span)
        if self.staged is not None:
            self.staged.record()
        return logits[:T]


def make_forward(model: Transformer, cache: KVCache, width: int, max_visible: int):
    """The forward a decoder should use: exact on CPU, width-`width` CUDA graphs on GPU."""
    if model.device.type != "cuda":
        return ExactForward(model, cache)
    return PaddedForward(model, cache, width, max_visible, graph=True)
