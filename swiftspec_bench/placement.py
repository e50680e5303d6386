"""Where our systems run: GPUs a run may use, the HBM floor each row is held against, and what
each row says about its placement and kernels."""
from __future__ import annotations

import os
import re

SPLIT_LABEL = re.compile(r"@(\d+)\+(\d+)")  # swiftspec@TARGET+DRAFT in a row's system label (systems.label)
TP_LABEL = re.compile(r"@tp(\d+)")  # ar@tpN, chain@tpN, tree@tpN


def label_split(system: str) -> tuple[int, int] | None:
    """(target GPUs, draft GPUs) of a row's system label at a --split, else None."""
    found = SPLIT_LABEL.search(system)
    return (int(found[1]), int(found[2])) if found else None


def label_processes(system: str) -> int:
    """Processes a row's system label ran on: swiftspec@1+1 -> 2, ar@tp2 -> 2, tree -> 1."""
    split, tp = label_split(system), TP_LABEL.search(system)
    return sum(split) if split else int(tp[1]) if tp else 1


def shared_gpu_systems(frame) -> list[str]:
    """Systems whose rows ran their processes on fewer GPUs (gpus < the label's processes:
    SWIFTSPEC_SHARED_GPU, runtime/gpus.py): their outputs count, their times do not."""
    if "gpus" not in frame:
        return []
    processes = frame["system"].map(label_processes)
    return list(dict.fromkeys(frame.loc[(frame["gpus"] > 0) & (frame["gpus"] < processes), "system"]))


def check_awq_shards(target: str, quant: str, systems: list[str], tp: int, split: tuple[int, int] | None) -> None:
    """--quant awq on a target split over ranks (--tp for ar, chain and tree; --split's target group
    for swiftspec) that cannot be: a user error before any weight loads, where the target's shape
    is known without loading it (else the ranks say it as they shard)."""
    from swiftspec_core.errors import UserError
    from swiftspec_core.models.awq import quantized_args
    from swiftspec_core.models.sharding import check_awq_shards as check

    from .kernel_choice import known_args
    from .systems import SYSTEMS, group_gpus, spans_processes

    args = known_args(target) if quant == "awq" else None
    if args is None:
        return
    args = args if args.quant == "awq" else quantized_args(args)
    for size in sorted({group_gpus(s, tp, split)[0] for s in systems if spans_processes(SYSTEMS[s], tp, split)}):
        try:
            check(args, size)
        except ValueError as exc:
            raise UserError(f"--quant awq: {target}'s target cannot be split over {size} ranks ({exc})") from None


# On the CPU the ranks share the machine's cores. Past this many a core they only contend, and
# each imports torch before its first heartbeat: --tp 99 on 2 cores ended, after minutes, in a
# heartbeat error instead of failing at once. The tests run up to 5 ranks on 2 cores.
CPU_PROCESSES_PER_CORE = 4


def check_processes(device: str, tp: int, split: tuple[int, int] | None) -> None:
    """Too few GPUs (or cores) for --tp or --split: a clear error before anything starts
    (runtime/gpus.py: a GPU a process, or shared where SWIFTSPEC_SHARED_GPU=1)."""
    placed = {"--tp": tp} | ({"--split": sum(split)} if split else {})
    for flag, processes in placed.items():
        if device == "cuda":
            from swiftspec_core.runtime.gpus import check_gpus

            check_gpus(processes, flag)
        else:
            _check_cores(processes, flag)


def _check_cores(processes: int, flag: str) -> None:
    from swiftspec_core.errors import UserError

    cores = os.cpu_count() or 1
    if processes > cores * CPU_PROCESSES_PER_CORE:
        raise UserError(f"{flag} runs {processes} processes; on the cpu at most {CPU_PROCESSES_PER_CORE} a core, "
                        f"{cores * CPU_PROCESSES_PER_CORE} on this machine's {cores} cores")


def draft_gpus(systems: list[str], tp: int, split: tuple[int, int] | None) -> int:
    """The most GPUs one draft engine of the run spans (systems.group_gpus); 0 when no system drafts."""
    from .systems import SYSTEMS, group_gpus

    spans = [group_gpus(s, tp, split)[1] for s in systems if SYSTEMS[s].needs_draft and SYSTEMS[s].on_engine]
    return max(spans, default=0)


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
    """Where a system ran: GPUs it used, and the kernels its forwards were made of (its engines',
    and its target engine's: lossless holds a row against ar on the same target kernels)."""
    from .systems import SYSTEMS, row_kernels, target_kernels

    sys = SYSTEMS[system]
    processes = (sum(pair.split) if system == "swiftspec" else pair.tp) if pair.spans_processes(sys) else 1
    cuda = pair.device == "cuda"
    gpus = min(processes, _visible_gpus()) if cuda else 0  # fewer than processes: shared (runtime/gpus.py)
    if sys.on_engine and pair.kernels != "torch":
        target = target_kernels(system, pair.kernels, pair.tp, pair.split, pair.persistent_target)
        return dict(gpus=gpus, kernels=row_kernels(system, pair.kernels, target), target_kernels=target)
    compiled = cuda and sys.on_engine  # on GPU our engines fuse their layers' ops with torch.compile
    kernels = "torch-compile" if compiled else "torch"
    return dict(gpus=gpus, kernels=kernels, target_kernels=kernels)


def _visible_gpus() -> int:
    import torch

    return torch.cuda.device_count()


def best_split(frame) -> tuple[int, int]:
    """The split the suite picks from a calibration run (swiftspec at several --split values into
    one folder): the highest mean tokens/s over the queries every split ran, ties to more target
    GPUs. ValueError where the rows hold no swiftspec split or no query all splits ran."""
    splits = frame["system"].map(label_split)
    at_split = splits.notna()
    if not at_split.any():
        raise ValueError("no swiftspec rows at a --split to pick from")
    rows = frame[at_split].assign(split=splits[at_split])
    keys = ["dataset", "question_id", "turn"]
    per_query = rows.pivot_table(index=keys, columns="split", values="tokens_per_s", aggfunc="mean").dropna()
    if per_query.empty:
        ran = ", ".join(f"{t}+{d}" for t, d in sorted(set(rows["split"])))
        raise ValueError(f"no query ran at every split ({ran})")
    speed = per_query.mean()
    return max(speed.index, key=lambda split: (round(speed[split], 6), split[0]))
