"""Group over torch.distributed: gloo on CPU (tests, CPU runs), or any torch backend.

The GPU path of the benchmark uses nccl.py (CuPy NCCL, capturable in CUDA graphs); this module
is the reference the CPU tests run, and works unchanged on a torch NCCL process group.
"""
from __future__ import annotations

import torch
import torch.distributed as dist


class TorchGroup:
    """A tensor-parallel Group over a torch.distributed process group."""

    def __init__(self, pg: dist.ProcessGroup | None = None):
        self.pg = pg if pg is not None else dist.group.WORLD
        self.rank = dist.get_rank(self.pg)
        self.size = dist.get_world_size(self.pg)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        dist.all_reduce(x, group=self.pg)
        return x

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        # The list form: gloo has no all_gather_into_tensor, and it costs nothing at our sizes.
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(self.size)]
        dist.all_gather(parts, x, group=self.pg)
        return torch.cat(parts, dim=-1)

    def barrier(self) -> None:
        dist.barrier(group=self.pg)
