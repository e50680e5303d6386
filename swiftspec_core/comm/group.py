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
