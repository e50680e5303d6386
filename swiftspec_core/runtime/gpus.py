"""Which GPU a rank drives. World rank r drives cuda:r, and a run needs a GPU a rank, unless
SWIFTSPEC_SHARED_GPU=1: then ranks that need no NCCL between them (every TP group of the run a
single rank, as swiftspec --split 1+1 at --tp 1; the own-process kernel tests) may share fewer
GPUs, rank r driving cuda:(r mod GPUs). Their processes' kernels take turns on a shared GPU (its
time slices: a rank spinning on a peer yields to it at the slice's end), so such a run checks
outputs (losslessness across processes where two GPUs are not at hand) and its times mean nothing:
rows record the GPUs used, and compare says so. NCCL refuses two ranks of one communicator on one
device, hence the rule on groups."""
from __future__ import annotations

import os

import torch

from ..errors import UserError

SHARED_GPU_ENV = "SWIFTSPEC_SHARED_GPU"


def shared_gpu() -> bool:
    """Whether ranks may share a GPU (SWIFTSPEC_SHARED_GPU=1)."""
    return os.environ.get(SHARED_GPU_ENV) == "1"


def gpu_of(rank: int) -> int:
    """The CUDA device world rank `rank` drives."""
    return rank % torch.cuda.device_count() if shared_gpu() else rank


def check_gpus(ranks: int, largest_group: int, what: str) -> None:
    """UserError unless `ranks` processes, the largest of whose NCCL groups (consecutive ranks) has
    `largest_group` ranks, fit the visible GPUs: one each, or shared where SWIFTSPEC_SHARED_GPU
    allows (consecutive ranks mod the GPUs fall on distinct devices while a group fits them)."""
    have = torch.cuda.device_count()
    if ranks <= have:
        return
    if not shared_gpu() or have == 0:
        raise UserError(f"{what} needs {ranks} GPUs, {have} visible")
    if largest_group > have:
        raise UserError(f"{what} needs {largest_group} GPUs for one NCCL group, {have} visible "
                        f"({SHARED_GPU_ENV} shares a GPU only between ranks that need no NCCL)")
