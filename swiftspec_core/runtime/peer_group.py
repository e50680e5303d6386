"""A tensor-parallel Group over CUDA IPC peer memory, without NCCL: the group of ranks that share a
GPU (runtime/gpus.py, SWIFTSPEC_SHARED_GPU), which NCCL refuses to put on one device.

Every op is our LL all-reduce (kernels/allreduce.py): an all-reduce of more than its inbox holds
goes in pieces, and all_gather is an all-reduce of each rank's part placed among zeros (adding
zeros is exact; a -0.0 comes back +0.0). For two ranks each sum is the one NCCL computes (a + b
rounded once), so a run's tokens are what a GPU a rank would give; its times mean nothing (the
ranks take turns on the GPU, and every op moves more than NCCL's would). Capturable in CUDA graphs.
"""
from __future__ import annotations

import torch

from ..comm.group import LowLatencyHook, ranks_along_last_dim
from ..kernels.allreduce import LLAllReduce, exchange_over

PIECE_BYTES = 4 << 20  # the inbox of the group's own all-reduce: 2 halves x world x 8 MB of lines


class PeerGroup(LowLatencyHook):
    """A Group (comm/group.py) of `size` ranks over host_pg (gloo, the same ranks), with
    NcclGroup's low-latency hook (use_low_latency: the fused kernels' companion inboxes)."""

    def __init__(self, host_pg, rank: int, size: int):
        self.rank, self.size, self.host_pg = rank, size, host_pg
        self._all_reduce = LLAllReduce(rank, size, exchange_over(host_pg, list(range(size))), max_bytes=PIECE_BYTES)

    def close(self) -> None:
        """Release every inbox (IPC handles closed before any teardown); idempotent."""
        self.drop_low_latency()
        self._all_reduce.close()

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Sum x over the group in place (bf16 or fp32, contiguous, on this rank's GPU); returns x."""
        flat = x.view(-1)
        step = PIECE_BYTES // x.element_size()  # pieces start 8-byte aligned where x does
        for start in range(0, flat.numel(), step):
            self._all_reduce(flat[start:start + step])
        return x

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        """Every rank's x concatenated along the last dimension, rank order."""
        parts = torch.zeros((self.size,) + tuple(x.shape), dtype=x.dtype, device=x.device)
        parts[self.rank] = x
        return ranks_along_last_dim(self.all_reduce(parts))
