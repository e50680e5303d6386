"""Group on GPU through CuPy's NCCL binding, on torch tensors and torch's current stream.

Why not torch.distributed's NCCL backend: its eager all-reduce costs ~39 us on 16 KB where a
direct ncclAllReduce costs ~13 us (2xH200; ../shared/design.md, outside the repo), and calls made
here are plain NCCL launches on the current stream, so a torch CUDA graph captures them.
Communicators are bootstrapped over the gloo world group that the launcher always creates (ids
travel as int64 tensors).

CuPy is imported only when a function here runs: this module imports on machines without it.
"""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

from .group import LowLatencyHook, ranks_along_last_dim

# NVLink SHARP multicast (NVLS) stays off on the lent machines; NCCL reads these at its first
# init and torch / NVSHMEM at theirs, so they are set before any communicator exists.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
UNIQUE_ID_BYTES = 128
NCCL_SUM = 0
NCCL_BFLOAT16 = 9  # ncclBfloat16 (NCCL >= 2.10); CuPy's enum stops at NCCL_FLOAT64 = 8


def force_safe_env() -> None:
    """Set the no-multicast variables, overriding any other value: multicast is never enabled."""
    os.environ.update(SAFE_ENV)


def _nccl():
    from cupy.cuda import nccl

    return nccl


def nccl_dtype(dtype: torch.dtype) -> int:
    nccl = _nccl()
    table = {
        torch.float32: nccl.NCCL_FLOAT32, torch.float16: nccl.NCCL_FLOAT16,
        torch.bfloat16: getattr(nccl, "NCCL_BFLOAT16", NCCL_BFLOAT16), torch.float64: nccl.NCCL_FLOAT64,
        torch.int32: nccl.NCCL_INT32, torch.int64: nccl.NCCL_INT64, torch.int8: nccl.NCCL_INT8,
        torch.uint8: nccl.NCCL_UINT8,
    }
    if dtype not in table:
        raise TypeError(f"NCCL has no type for {dtype}")
    return table[dtype]


def _stream() -> int:
    # The raw cudaStream_t of torch's current stream: inside torch.cuda.graph capture this is
    # the capture stream, so the NCCL kernel lands in the graph.
    return torch.cuda.current_stream().cuda_stream


def _check_cuda(x: torch.Tensor) -> None:
    if not x.is_cuda or not x.is_contiguous():
        raise ValueError(f"NCCL operands are contiguous CUDA tensors, got {x.device} "
                         f"{'contiguous' if x.is_contiguous() else 'strided'}")


def create_comms(member_lists: list[list[int]], world_rank: int, world: dist.ProcessGroup | None = None) -> list:
    """One NcclCommunicator per list of world ranks (None where this rank is not a member).

    Collective over the gloo `world` group: every world rank calls it with the same lists, after
    torch.cuda.set_device. The first member of each list makes its unique id (NCCL's bootstrap
    root lives in that process) and one all-reduce of zero-padded ids gives every rank all ids.
    Communicators are then initialised in list order on every rank, a global order that keeps
    ranks belonging to several of them from waiting on each other in a cycle.
    """
    force_safe_env()
    import cupy

    nccl = _nccl()
    cupy.cuda.Device(torch.cuda.current_device()).use()  # NCCL binds to the current device
    ids = torch.zeros(len(member_lists), UNIQUE_ID_BYTES, dtype=torch.int64)
    for i, ranks in enumerate(member_lists):
        if ranks and ranks[0] == world_rank:
            ids[i] = torch.tensor(list(nccl.get_unique_id()), dtype=torch.int64)
    dist.all_reduce(ids, group=world)
    # CuPy 14 hands the id out as bytes (older CuPy as a tuple of ints) and takes it back the same way.
    as_bytes = isinstance(nccl.get_unique_id(), (bytes, bytearray))
    comms = []
    for ranks, uid in zip(member_lists, ids):
        if world_rank in ranks:
            key = bytes(uid.tolist()) if as_bytes else tuple(uid.tolist())
            comms.append(nccl.NcclCommunicator(len(ranks), key, ranks.index(world_rank)))
        else:
            comms.append(None)
    return comms


class NcclGroup(LowLatencyHook):
    """A tensor-parallel Group on one NCCL communicator. Ops run on torch's current stream. With
    use_low_latency (LowLatencyHook) it all-reduces what the LL all-reduce takes (small messages,
    one-shot over peer memory) with it, the rest with NCCL."""

    def __init__(self, comm, host_pg=None):
        self.comm = comm
        self.host_pg = host_pg  # a gloo group of the same ranks (use_low_latency's exchange)
        self.rank = comm.rank_id()
        self.size = comm.size()

    def close(self) -> None:
        """Release the LL inboxes (IPC handles closed before any teardown); NCCL stays usable."""
        self.drop_low_latency()

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        # Size and dtype alone choose the path: they are the same on every rank, so all agree.
        ll = self.low_latency
        if ll is not None and ll.takes(x):
            return ll(x)
        _check_cuda(x)
        ptr = x.data_ptr()
        self.comm.allReduce(ptr, ptr, x.numel(), nccl_dtype(x.dtype), NCCL_SUM, _stream())
        return x

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        _check_cuda(x)
        out = torch.empty((self.size,) + tuple(x.shape), dtype=x.dtype, device=x.device)
        self.comm.allGather(x.data_ptr(), out.data_ptr(), x.numel(), nccl_dtype(x.dtype), _stream())
        return ranks_along_last_dim(out)  # NCCL concatenates rank-major
