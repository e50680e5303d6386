"""Group and Link over torch.distributed: gloo on CPU (tests, CPU runs), or any torch backend.

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


def check_message(buf: torch.Tensor) -> None:
    # Fixed-size int32 buffers: both ends preallocate the same size, so nothing is ever sized
    # on the wire, and a CUDA graph can hold the transfer.
    if buf.dtype != torch.int32 or not buf.is_contiguous():
        raise ValueError(f"link messages are contiguous int32 buffers, got {buf.dtype} "
                         f"{'contiguous' if buf.is_contiguous() else 'strided'}")


class TorchLink:
    """The draft<->target channel of one rank: int32 messages between world ranks.

    Every rank of one group receives each message from exactly one rank of the other group
    (`recv_from`) and sends its own to the ranks that receive from it (`send_to`); see
    runtime/launch.py Placement.link_peers. Each direction is an ordered stream of messages whose
    size both ends agree on. Here a send never waits; nccl.NcclLink's does (on its stream), so
    protocols keep to send-then-receive on one end and receive-then-send on the other.
    """

    def __init__(self, send_to: list[int], recv_from: int):
        self.send_to, self.recv_from = list(send_to), recv_from
        self._staging = torch.zeros(0, dtype=torch.int32)
        self._pending: list[dist.Work] = []

    def send(self, buf: torch.Tensor) -> None:
        """Returns at once: the message is copied to a staging buffer and sent in the background,
        so the sender never waits for the receiver and may reuse buf right away."""
        check_message(buf)
        self._wait_sent()
        if self._staging.numel() != buf.numel():
            self._staging = torch.empty(buf.numel(), dtype=torch.int32)
        self._staging.copy_(buf.reshape(-1))
        self._pending = [dist.isend(self._staging, dst) for dst in self.send_to]

    def recv(self, buf: torch.Tensor) -> torch.Tensor:
        """Block until the next message arrives; it is written into buf, which is returned."""
        check_message(buf)
        dist.recv(buf.view(-1), src=self.recv_from)
        return buf

    def _wait_sent(self) -> None:
        for work in self._pending:
            work.wait()
        self._pending = []

    def close(self) -> None:
        self._wait_sent()
