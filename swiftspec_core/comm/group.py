"""The tensor-parallel group a model shard talks to. One process alone is SingleGroup."""
from __future__ import annotations

from typing import Protocol

import torch


class Group(Protocol):
    rank: int
    size: int

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum x over the group, in place; returns x."""

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        """Concatenate every rank's x along the last dimension, rank order."""


class SingleGroup:
    rank = 0
    size = 1

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        return x


class LowLatencyHook:
    """The opt-in of a GPU group (NcclGroup, runtime/peer_group.py's PeerGroup) to the fused
    kernels' LL all-reduce (kernels.allreduce.LLAllReduce on the group's ranks; forward.py reads
    `low_latency`), owned by the group from then on."""
    low_latency = None

    def use_low_latency(self, all_reduce) -> None:
        self.drop_low_latency()
        self.low_latency = all_reduce

    def drop_low_latency(self) -> None:
        """Release its inboxes (IPC handles closed before any teardown); idempotent."""
        if self.low_latency is not None:
            self.low_latency.close()
            self.low_latency = None


def ranks_along_last_dim(parts: torch.Tensor) -> torch.Tensor:
    """[size, ..., n] rank-major parts -> [..., size * n]: each rank's part side by side in the last
    dimension (an all-gather's result)."""
    return parts.movedim(0, -2).reshape(tuple(parts.shape[1:-1]) + (parts.shape[0] * parts.shape[-1],))
