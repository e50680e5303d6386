"""KV cache of one model for one request: the verified prefix, then the draft tree, both contiguous.

Rows [0, length) hold the keys and values of verified tokens in order (RoPE already applied at
their positions). Rows from `length` on are scratch for the current tree: a forward writes its
tokens into the rows it is given, and `keep` moves the rows that survive a verification (or a
re-root) to just after the prefix. Everything is allocated once for `max_len` rows, plus one
scratch row that padding tokens of fixed-width (CUDA graph) forwards write and read.
"""
from __future__ import annotations

import torch


class KVCache:
    def __init__(self, n_layers: int, n_kv_heads: int, head_dim: int, max_len: int, dtype: torch.dtype,
                 device="cpu"):
        self.rows = max_len + 1
        self.scratch_row = max_len
        # Keys and values in one tensor, so that keep() moves both in one gather and one scatter
        # (profiled on the H200 host: ~40 us a gather, ~24 a scatter; a keep runs every round).
        self.kv = torch.zeros(2, n_layers, self.rows, n_kv_heads, head_dim, dtype=dtype, device=device)
        self.k, self.v = self.kv[0], self.kv[1]  # [layers, rows, kv heads, head dim] each, contiguous
        self.max_len = max_len
        self.length = 0  # verified rows
        self.deferred: tuple[list[int], int] | None = None  # a keep() put off until settle()

    def write(self, layer: int, rows: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        """rows: [T] int64 cache rows; k, v: [T, kv_heads, head_dim]."""
        self.k[layer].index_copy_(0, rows, k)
        self.v[layer].index_copy_(0, rows, v)

    def view(self, layer: int, n_rows: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The first n_rows rows of a layer: [n_rows, kv_heads, head_dim] each."""
        return self.k[layer, :n_rows], self.v[layer, :n_rows]

    def restart(self, length: int) -> None:
        """A prefill wrote rows [0, length) afresh: they are the prefix, and a keep the last
        request deferred is void."""
        self.length, self.deferred = length, None

    def keep(self, rows: list[int], verified: int, defer: bool = False) -> None:
        """Move `rows` (ascending, all >= self.length) to [length, length + len(rows)).

        The first `verified` of them become part of the prefix; the rest stay as tree rows right
        after it. Ascending sources land at or below themselves, so copying in order is safe.
        defer: only note the move; `settle` makes it (the split runtime answers the other side
        before the index copies and their host work). Nothing may read `length` until then.
        """
        if defer:
            self.deferred = (rows, verified)
            return
        if any(b <= a for a, b in zip(rows, rows[1:])) or (rows and rows[0] < self.length):
            raise ValueError(f"rows to keep must ascend from {self.length}: {rows}")
        moves = [(s, d) for d, s in enumerate(rows, start=self.length) if s != d]
        if moves:
            src, dst = torch.tensor(moves, device=self.kv.device).T
            self.kv[:, :, dst] = self.kv[:, :, src]
        self.length += verified

    def settle(self) -> None:
        """Make the keep that was deferred, if any."""
        if self.deferred is not None:
            rows, verified = self.deferred
            self.deferred = None
            self.keep(rows, verified)

    def truncate(self, length: int) -> None:
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate a cache of {self.length} rows to {length}")
        self.length = length
