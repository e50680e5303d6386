"""Where our systems run: GPUs a run may use, the HBM floor each row is held against, and what
each row says about its placement and kernels."""
from __future__ import annotations

from swiftspec_core.errors import UserError


def check_processes(device: str, tp: int, split: tuple[int, int] | None) -> None:
    """Too few GPUs for --tp or --split: a clear error before anything starts."""
    if device != "cuda":
        return
    import torch

    have = torch.cuda.device_count()
    for flag, need in (("--tp", tp), ("--split", sum(split) if split else 0)):
        if need > have:
            raise UserError(f"{flag} needs {need} GPUs, {have} visible")


def floors(pair, device: str) -> dict:
    """The HBM floor of one forward of each model on one GPU (all its weight bytes / measured copy
    bandwidth), so every row carries the number its times are held against. It is the one-GPU
    floor on every row, TP rows too (where each GPU reads about 1/N of the weights)."""
    from swiftspec_core.models.args import ModelArgs

    if device != "cuda":
        return dict(bandwidth_tb_s=None, target_floor_ms=None, draft_floor_ms=None)
    from swiftspec_core.models.awq import quantized_args
    from swiftspec_core.runtime.floor import copy_bandwidth

    bw = copy_bandwidth()
    size = pair.dtype.itemsize

    def floor(loaded, quant: str = "none") -> float:
        args = loaded.awq[0] if loaded.awq is not None else ModelArgs.from_hf_config(loaded.config)
        if quant == "awq" and args.quant != "awq":  # quantized as the engine does it (weights.engine_from_hf)
            args = quantized_args(args)
        return args.weight_bytes(size) / bw * 1e3

    return dict(bandwidth_tb_s=bw / 1e12, target_floor_ms=floor(pair.target, pair.quant),
                draft_floor_ms=floor(pair.draft) if pair.draft is not None else None)


def where(pair, system: str) -> dict:
    """Where a system ran: GPUs it used, and the kernels its forwards were made of."""
    from .systems import SYSTEMS

    sys = SYSTEMS[system]
    processes = (sum(pair.split) if system == "swiftspec" else pair.tp) if pair.spans_processes(sys) else 1
    cuda = pair.device == "cuda"
    if sys.on_engine and pair.kernels == "fused":
        return dict(gpus=processes, kernels="fused")
    compiled = cuda and sys.on_engine  # on GPU our engines fuse their layers' ops with torch.compile
    return dict(gpus=processes if cuda else 0, kernels="torch-compile" if compiled else "torch")
