"""The draft<->target link: named pipes (FIFOs) in the run's rendezvous folder, host to host.

Both messages of a SwiftSpec round are host data that Python reads at the other end (a verdict's
tokens; a subtree's tokens and parents), so they travel between the two processes' memories: a
pipe write and a read, no GPU copy, no NCCL kernel and no stream synchronization on either side.
The NCCL link it replaces cost about 0.25 ms a round on 2x H200 (the target's median wait minus
the draft's critical path, paper_figures/results/2026-11-30-2xh200-kernels/e2e/first-round).

Peers: every rank of one group receives each message from exactly one rank of the other group
(`recv_from`) and sends its own to the ranks that receive from it (`send_to`); see
runtime/launch.py Placement.link_peers. Each direction is an ordered stream of fixed-size int32
messages whose size both ends agree on. A send never waits for the receiver (up to the pipe's
buffer, 64 KB on Linux); a receive blocks until its message is whole, and raises if the sender
has gone (end of file), which ends the run like any worker failure.

A receiver on a GPU spins (spin_s): it polls its pipe without sleeping for up to spin_s, then
sleeps in select(). A round's two messages each wait well under a millisecond, and a thread that
sleeps in a blocking read wakes tens of microseconds after the write on a loaded host (2-core
machine here: median 2.7 us but p90 88 us a round trip, against 2.3 us p90 spinning); on the CPU
the other process needs the cores, so nobody spins there. One wait is longer by design, the draft's
for a request's first verdict (the target's prefill): a receive may spin longer than its link's
spin_s (PREFILL_SPIN_S there).
"""
from __future__ import annotations

import os
import select
import time

import torch

GPU_SPIN_S = 0.02  # how long a GPU run's receivers poll before they sleep
# The draft's wait for a request's first verdict spans the target's prefill (tens of ms): polled
# through, so that the first round's critical path starts on a running thread and core, not from
# select() and an idle core (NOTES v95). Only where the link spins at all.
PREFILL_SPIN_S = 2.0


def spin_for(device: str) -> float:
    """A receiver's spin for ranks on `device`: none on the CPU, whose cores the other ranks need."""
    return GPU_SPIN_S if device == "cuda" else 0.0


def check_message(buf: torch.Tensor) -> None:
    # Fixed-size int32 host buffers: both ends preallocate the same size, so nothing is ever
    # sized on the wire.
    if buf.dtype != torch.int32 or not buf.is_contiguous() or buf.device.type != "cpu":
        raise ValueError(f"link messages are contiguous int32 CPU buffers, got {buf.dtype} on {buf.device} "
                         f"{'contiguous' if buf.is_contiguous() else 'strided'}")


class PipeLink:
    """One rank's end of the link. Made in three steps, each after a barrier over the world:
    create() (this rank's inbound FIFO), open_inbound(), open_outbound()."""

    def __init__(self, folder: str, rank: int, send_to: list[int], recv_from: int, spin_s: float = 0.0):
        self.folder, self.rank, self.send_to, self.recv_from = folder, rank, list(send_to), recv_from
        self.spin_s = spin_s
        self._in: int | None = None
        self._out: list[int] = []

    def _path(self, src: int, dst: int) -> str:
        return os.path.join(self.folder, f"link-{src}-to-{dst}")

    def create(self) -> None:
        os.mkfifo(self._path(self.recv_from, self.rank))

    def open_inbound(self) -> None:
        # Non-blocking, so the open returns before any writer comes; then blocking reads unless
        # this end spins (_read polls the non-blocking descriptor).
        self._in = os.open(self._path(self.recv_from, self.rank), os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(self._in, not self.spin_s)

    def open_outbound(self) -> None:
        # Every reader is open by now (a barrier), so these opens return at once.
        self._out = [os.open(self._path(self.rank, dst), os.O_WRONLY) for dst in self.send_to]

    def send(self, buf: torch.Tensor) -> None:
        check_message(buf)
        data = memoryview(buf.numpy()).cast("B")
        for fd in self._out:
            done = 0
            while done < len(data):  # one write unless the message passes the pipe's atomic size
                done += os.write(fd, data[done:])

    def recv(self, buf: torch.Tensor, spin_s: float | None = None) -> torch.Tensor:
        """Block until the next message is whole; it is written into buf, which is returned. spin_s:
        poll this long before sleeping instead of the link's own spin (a link that does not spin,
        on the CPU, never does)."""
        check_message(buf)
        into = memoryview(buf.numpy()).cast("B")
        spin_s = self.spin_s if spin_s is None or not self.spin_s else spin_s
        got = 0
        while got < len(into):
            n = self._read(into[got:], spin_s)
            if n == 0:
                raise ConnectionError(f"rank {self.rank}: rank {self.recv_from} closed the link mid-message"
                                      if got else f"rank {self.rank}: rank {self.recv_from} closed the link")
            got += n
        return buf

    def _read(self, into: memoryview, spin_s: float) -> int:
        """Bytes read into `into` (0: the sender has gone), once some are there."""
        if not spin_s:
            return os.readv(self._in, [into])
        deadline = time.perf_counter() + spin_s
        while True:
            try:
                return os.readv(self._in, [into])
            except BlockingIOError:
                if time.perf_counter() > deadline:
                    select.select([self._in], [], [])  # a long wait (a prefill): sleep until readable

    def close(self) -> None:
        for fd in self._out + ([self._in] if self._in is not None else []):
            os.close(fd)
        self._out, self._in = [], None
