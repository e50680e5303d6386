"""Which GPU a rank drives. World rank r drives cuda:r, and a run needs a GPU a rank, unless
SWIFTSPEC_SHARED_GPU=1: then a run of more ranks than GPUs puts rank r on cuda:(r mod GPUs), and
its tensor-parallel groups talk over CUDA IPC peer memory (peer_group.py: our LL
all-reduce) instead of NCCL, which refuses two ranks on one device. The processes' kernels take
turns on a shared GPU (its time slices: a rank spinning on a peer yields to it at the slice's
end), so such a run checks outputs (losslessness across processes, TP included, where the GPUs
are not at hand) and its times mean nothing: rows record the GPUs used, and compare says so."""
from __future__ import annotations

import os

import torch

from ..errors import UserError

SHARED_GPU_ENV = "SWIFTSPEC_SHARED_GPU"


def shared_gpu() -> bool:
    """Whether ranks may share a GPU (SWIFTSPEC_SHARED_GPU=1)."""
    return os.environ.get(SHARED_GPU_ENV) == "1"


def shares_gpus(ranks: int) -> bool:
    """Whether a run of `ranks` processes puts more than one on a GPU."""
    return shared_gpu() and torch.cuda.device_count() < ranks


def gpu_of(rank: int) -> int:
    """The CUDA device world rank `rank` drives."""
    return rank % torch.cuda.device_count() if shared_gpu() else rank


def check_gpus(ranks: int, what: str) -> None:
    """UserError unless `ranks` processes fit the visible GPUs: one each, or shared where
    SWIFTSPEC_SHARED_GPU allows."""
    have = torch.cuda.device_count()
    if ranks > have and (not shared_gpu() or have == 0):
        raise UserError(f"{what} needs {ranks} GPUs, {have} visible")
