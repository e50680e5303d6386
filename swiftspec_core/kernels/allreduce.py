"""Low-latency one-shot all-reduce among the GPUs of one node (cuda/allreduce.cu), its reference,
and the row-parallel GEMM followed by it.

NCCL in a CUDA graph costs 12-20 us at every small size on the 2xH200 machine; a probe of this
design there (data and flag stored together in one NVLink trip, the receiver polls its own inbox)
took 2.3 us at 4 KB and 3.0 us at 64 KB. Every rank gets the same bits: the sum runs in fp32 in
rank order and is rounded once.
"""
from __future__ import annotations

import pickle
from typing import Callable

import torch
import torch.distributed as dist

from .build import function, launch, ptr

KERNELS = {torch.bfloat16: "ll_allreduce_bf16", torch.float32: "ll_allreduce_f32"}
MAX_WORLD = 8  # one node: CUDA IPC reaches the GPUs of one host
LINE_DATA = 8  # data bytes a 16-byte LL line carries
LINE_BYTES = 16
THREADS = 128
# Lines a block owns: 1 KB of message, one line a thread. At 2 lines a thread a 16 KB message took
# 2.82 us a call and at one 2.41 (paper_figures/allreduce_sweep.py, 2x H200, 100 calls a graph;
# results/2026-11-30-2xh200-session5/s1/allreduce-sweep.md): more blocks poll at once.
CHUNK = 128
MAX_BLOCKS = 1024  # above this a block owns more lines (fixed per instance) rather than more blocks
IPC_LAZY_PEER_ACCESS = 1  # cudaIpcMemLazyEnablePeerAccess

Exchange = Callable[[bytes], list]


def all_reduce_reference(xs: list[torch.Tensor]) -> torch.Tensor:
    """The sum of the ranks' tensors as the kernel computes it: fp32, rank order starting from
    rank 0's value, rounded once to the inputs' dtype."""
    acc = xs[0].float()
    for x in xs[1:]:
        acc = acc + x.float()
    return acc.to(xs[0].dtype)


def supports(x: torch.Tensor) -> bool:
    """Whether LLAllReduce takes x whatever its size: a contiguous bf16 or fp32 CUDA tensor."""
    return x.is_cuda and x.is_contiguous() and x.dtype in KERNELS


def exchange_over(pg, members: list[int]) -> Exchange:
    """An Exchange over a torch.distributed (gloo) group: an all-gather of every rank of pg, of
    which the payloads of `members` (pg ranks, in the all-reduce's rank order) are returned. It is
    collective over pg: every rank of pg calls it once per LLAllReduce built on any of its groups."""
    def exchange(payload: bytes) -> list:
        out: list = [None] * dist.get_world_size(pg)
        dist.all_gather_object(out, payload, group=pg)
        return [out[m] for m in members]

    return exchange


class PeerInbox:
    """Inboxes of 16-byte LL lines, [2 halves by epoch parity][world senders][lines], one in each
    rank's GPU memory (cudaMalloc'd, zeroed: flag 0 is no epoch), reachable by every rank of the
    group through CUDA IPC: `peers` ([world] int64 on the device) holds each rank's inbox address
    as this process maps it, peers[rank] its own. The kernels that write and poll them keep their
    own epochs (cuda/allreduce.cu's header says why a line must have one owner).

    Collective: every rank constructs it together with the same `lines` and `kind` (the exchange
    is an all-gather; a rank that disagrees fails the construction on every rank). timeout_s: a
    peer this late is gone: the kernels trap."""

    def __init__(self, rank: int, world: int, exchange: Exchange, lines: int, kind: str, timeout_s: float = 120.0):
        if not 2 <= world <= MAX_WORLD or not 0 <= rank < world:
            raise ValueError(f"{kind} needs 2..{MAX_WORLD} ranks and 0 <= rank < world, got rank {rank} of {world}")
        import cupy

        self.rank, self.world, self.lines, self.timeout_s = rank, world, lines, timeout_s
        self.timeout_ns = int(timeout_s * 1e9)
        self.device = torch.cuda.current_device()
        self._runtime = cupy.cuda.runtime
        self._inbox: int | None = None
        self._opened: list[int] = []
        inbox_bytes = 2 * world * lines * LINE_BYTES
        with cupy.cuda.Device(self.device):
            # cudaMalloc, not torch's caching allocator: an IPC handle names an allocation's base.
            self._inbox = self._runtime.malloc(inbox_bytes)
            self._runtime.memset(self._inbox, 0, inbox_bytes)  # flag 0: no epoch ever uses it
            self._runtime.deviceSynchronize()  # zeroed before any peer can write into it
            mine = (self.device, kind, lines, bytes(self._runtime.ipcGetMemHandle(self._inbox)))
        try:
            theirs = [pickle.loads(p) for p in exchange(pickle.dumps(mine))]
            if len(theirs) != world or theirs[rank] != mine:
                raise ValueError(f"exchange returned {len(theirs)} payloads, or not this rank's "
                                 f"own at {rank}: it must all-gather in rank order")
            inboxes = {t[1:3] for t in theirs}
            if inboxes != {(kind, lines)}:
                raise ValueError(f"ranks disagree on the inbox (kind, lines): {sorted(inboxes)}")
            peers = []
            with cupy.cuda.Device(self.device):
                for r, (_, _, _, handle) in enumerate(theirs):
                    if r == rank:
                        peers.append(self._inbox)
                    else:
                        peers.append(self._runtime.ipcOpenMemHandle(handle, IPC_LAZY_PEER_ACCESS))
                        self._opened.append(peers[-1])
        except BaseException:
            self.close()
            raise
        self.peers = torch.tensor(peers, dtype=torch.int64, device=self.device)

    @property
    def closed(self) -> bool:
        return self._inbox is None

    def check_call(self, op: str, x: torch.Tensor) -> None:
        """ValueError unless the inbox is open and x is on its device (a fused kernel's call)."""
        if self.closed:
            raise ValueError(f"{op}: its inbox is closed")
        if x.device.index != self.device:
            raise ValueError(f"{op}: built on cuda:{self.device}, x is on {x.device}")

    def close(self) -> None:
        """Close the peers' IPC handles and free the inbox; idempotent. Call it on every rank after
        the last kernel on it (the launcher's teardown barrier follows): the device is synchronized
        first, so no store of ours to a peer is in flight, and every peer's store to our inbox has
        landed, since our last call waited for all of them."""
        if self._inbox is None:
            return
        import cupy

        with cupy.cuda.Device(self.device):
            self._runtime.deviceSynchronize()
            while self._opened:
                self._runtime.ipcCloseMemHandle(self._opened.pop())
            self._runtime.free(self._inbox)
        self._inbox = None


class LLAllReduce(PeerInbox):
    """One-shot all-reduce for small messages among the ranks of one node (2..8 GPUs), NCCL's LL
    idea: each 8-byte word carries 4 data bytes and a 4-byte flag (the call's epoch), two words to a
    16-byte store, each word landing whole (cuda/allreduce.cu); each rank writes its data straight
    into every peer's inbox (CUDA IPC), and polls its own inbox until all flags show this epoch; epochs live in device memory (so CUDA graph replays advance them) and
    the inbox has two halves by epoch parity (so a fast rank's next call never overwrites data a
    slow peer has not read).

    timeout_s: a peer this late is gone (dead, or called with another size): the kernel traps, so
    the process sees a CUDA error instead of a stream hung forever.

    Collective: every rank constructs it together (the exchange is an all-gather) and calls it with
    the same sizes and dtypes in the same order; the launch shape depends only on the size, so the
    ranks' blocks pair up. Runs on torch's current stream; capturable in CUDA graphs.
    """

    def __init__(self, rank: int, world: int, exchange: Exchange, max_bytes: int = 512 * 1024,
                 timeout_s: float = 120.0):
        if max_bytes < LINE_DATA:
            raise ValueError(f"max_bytes must be at least {LINE_DATA}, got {max_bytes}")
        self.max_bytes = max_bytes
        lines = -(-max_bytes // LINE_DATA)
        # Fixed for the instance: which block owns a line never changes with the message size.
        self.chunk = max(CHUNK, -(-lines // MAX_BLOCKS))
        self.blocks = -(-lines // self.chunk)
        self.capacity = self.blocks * self.chunk  # lines per (half, sender)
        super().__init__(rank, world, exchange, self.capacity, f"LLAllReduce(max_bytes={max_bytes})", timeout_s)
        self.exchange = exchange  # for the companions' inboxes
        self._companions: dict = {}
        self.epochs = torch.zeros(self.blocks, dtype=torch.int32, device=self.device)
        for kernel in KERNELS.values():  # compiled now, not at a first call inside a graph capture
            function("allreduce", kernel, self.device, 0)

    def companion(self, key, build: Callable):
        """build(rank, world, exchange, timeout_s) for key, made at the first request and kept:
        another PeerInbox of this group's ranks (kernels/gemm_epilogue.py's GemmAllReduce), closed
        with this instance. Its first request is collective, as this instance's construction was:
        every rank asks for the same keys in the same order, outside any CUDA graph capture."""
        if key not in self._companions:
            if self.closed:
                raise ValueError("LLAllReduce is closed")
            if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
                raise RuntimeError(f"{key} is first needed inside a CUDA graph capture; its inbox is made "
                                   f"collectively and must be made by an eager call (a warm-up) first")
            self._companions[key] = build(self.rank, self.world, self.exchange, self.timeout_s)
        return self._companions[key]

    def takes(self, x: torch.Tensor) -> bool:
        """Whether x goes through this all-reduce: a supported tensor of at most max_bytes. Size
        and dtype alone decide, so every rank of the group decides alike."""
        return supports(x) and x.numel() * x.element_size() <= self.max_bytes

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Sum x over the ranks, in place; returns x. x: contiguous bf16 or fp32 CUDA tensor of at
        most max_bytes, on this instance's device."""
        if self.closed:
            raise ValueError("LLAllReduce is closed")
        if not supports(x):
            raise ValueError(f"LLAllReduce takes contiguous bf16 or fp32 CUDA tensors, got {x.dtype} "
                             f"on {x.device}{'' if x.is_contiguous() else ', strided'}")
        if x.device.index != self.device:
            raise ValueError(f"LLAllReduce was built on cuda:{self.device}, x is on {x.device}")
        nbytes = x.numel() * x.element_size()
        if nbytes > self.max_bytes:
            raise ValueError(f"LLAllReduce takes at most {self.max_bytes} bytes, got {nbytes}")
        if nbytes == 0:
            return x
        if x.data_ptr() % LINE_DATA:
            # Lines are read as 8-byte words; a misaligned view goes through an aligned copy (the
            # ranks must not choose different paths, so this is not a reason to refuse).
            staged = x.clone()
            self._launch(staged, nbytes)
            return x.copy_(staged)
        self._launch(x, nbytes)
        return x

    def _launch(self, x: torch.Tensor, nbytes: int) -> None:
        import numpy as np

        blocks = -(-nbytes // (LINE_DATA * self.chunk))
        launch("allreduce", KERNELS[x.dtype], (blocks,), (THREADS,),
               (ptr(x), np.int64(nbytes), ptr(self.peers), ptr(self.epochs), np.int32(self.rank),
                np.int32(self.world), np.int64(self.capacity), np.int32(self.chunk), np.uint64(self.timeout_ns)))

    def close(self) -> None:
        """Close the companions, then this inbox (PeerInbox.close); idempotent."""
        while self._companions:
            self._companions.popitem()[1].close()
        super().close()


def gemm_allreduce(x: torch.Tensor, w: torch.Tensor, ar: LLAllReduce, out: torch.Tensor | None = None) -> torch.Tensor:
    """The row-parallel o_proj / down_proj: x [M, K_shard] @ w [N, K_shard]^T, summed over the
    ranks. Our GEMM (kernels/gemm.py) then the LL all-reduce, both on the current stream; the
    result is [M, N] bf16, the same bits on every rank. The unfused pair: gemm_epilogue's
    fused_gemm_allreduce does both in one kernel, with these bits (its tests hold it to this)."""
    from .gemm import gemm  # another helper's module: imported at first use

    return ar(gemm(x, w, out=out))
