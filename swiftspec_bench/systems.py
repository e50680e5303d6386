"""The systems under test, by name: ours (swiftspec_core's decoders, on engines built from the
loaded weights) and the third-party peers (transformers, on the loaded HF models); and the one
function that runs one query on one system."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from swiftspec_core.decoders import DECODERS, GRAFTING
from swiftspec_core.decoders import NEEDS_DRAFT as OURS_NEED_DRAFT
from swiftspec_core.decoders.base import DecodeResult, SpecSettings
from swiftspec_core.errors import UserError
from swiftspec_core.runtime.heartbeat import DEFAULT_TIMEOUT_S

from . import hf_systems
from .names import parse_names


@dataclass(frozen=True)
class System:
    name: str
    decode: Callable[..., DecodeResult]  # decode(target, draft, prompt_ids, *, max_new_tokens, eos_ids, settings)
    needs_draft: bool
    on_engine: bool  # True: takes our engines (swiftspec_core Transformer); False: takes LoadedModels


SYSTEMS: dict[str, System] = {
    **{name: System(name, fn, name in OURS_NEED_DRAFT, True) for name, fn in DECODERS.items()},
    **{name: System(name, fn, name in hf_systems.NEEDS_DRAFT, False) for name, fn in hf_systems.PEERS.items()},
}


def parse_system_list(text: str) -> list[str]:
    """A comma list of system names, in the order given, without repeats."""
    return parse_names(text, "--systems", "system", SYSTEMS)


def label(name: str, tp: int, split: tuple[int, int] | None, draft_steps: int | None = None,
          graft: str = "off", kernels: str = "torch", persistent_target: bool = False) -> str:
    """A system's name in the rows, with its placement where it spans processes (ar@tp2,
    swiftspec@1+1), swiftspec's d where it was fixed (swiftspec:d3), grafting where the system
    grafts (tree:graft) and our kernels where its engines run them (row_kernels: ar:fused,
    ar:persistent; tree:persistent, a draft on the persistent kernel), so runs that differ only
    there can share a folder. persistent_target: kernel_choice.persistent_target's verdict on the run."""
    suffix = ":graft" if name in GRAFTING and graft != "off" else ""
    if SYSTEMS[name].on_engine and kernels != "torch":
        suffix += f":{row_kernels(name, kernels, target_kernels(name, kernels, tp, split, persistent_target))}"
    if name == "swiftspec":
        where = f"@{split[0]}+{split[1]}" if split else ""
        return f"swiftspec{where}" + (f":d{draft_steps}" if draft_steps else "") + suffix
    if SYSTEMS[name].on_engine and tp > 1:
        return f"{name}@tp{tp}{suffix}"
    return name + suffix


def target_kernels(name: str, kernels: str, tp: int, split: tuple[int, int] | None, persistent_target: bool) -> str:
    """The set a system's target engine runs under --kernels `kernels`: the persistent kernel's
    where the run's target takes it (persistent_target) and is on one GPU (group_gpus), else
    engine_kernels'."""
    from swiftspec_core.models.transformer import engine_kernels

    on_one_gpu = group_gpus(name, tp, split)[0] == 1
    return engine_kernels(kernels, draft=False, persistent_target=persistent_target and on_one_gpu)


def group_gpus(name: str, tp: int, split: tuple[int, int] | None) -> tuple[int, int]:
    """(the GPUs a system's target engine spans, its draft engine's): swiftspec's groups at --split
    T+D (both in one process, one GPU, without one), the others' both on --tp (their draft shares
    the target's processes)."""
    if name == "swiftspec":
        return tuple(split) if split else (1, 1)
    return tp, tp


def spans_processes(system: System, tp: int, split: tuple[int, int] | None) -> bool:
    """Whether a system runs over several processes: swiftspec at a --split, our other engines'
    systems at --tp > 1 (the hf-* peers never)."""
    return system.on_engine and (split is not None if system.name == "swiftspec" else tp > 1)


def check_placement(systems: list[str], tp: int, split: tuple[int, int] | None, split_text: str | None,
                    draft_steps: int | None = None) -> None:
    """A user error where --tp or --split places none of the run's systems, or --draft-steps
    (swiftspec's d) is given without swiftspec: it would be ignored."""
    if draft_steps is not None and "swiftspec" not in systems:
        raise UserError(f"--draft-steps {draft_steps} sets swiftspec's d, and --systems has no swiftspec")
    if split is not None and not any(spans_processes(SYSTEMS[s], 1, split) for s in systems):
        raise UserError(f"--split {split_text} places swiftspec's target and draft, and --systems has no swiftspec")
    if tp > 1 and not any(spans_processes(SYSTEMS[s], tp, None) for s in systems):
        raise UserError(f"--tp {tp} runs ar, chain and tree over {tp} processes, and --systems has none of them "
                        f"(swiftspec takes --split)")


def row_kernels(name: str, kernels: str, target_set: str) -> str:
    """What a system's engines ran under --kernels `kernels`, its `kernels` column and label: a
    drafting system's set (under persistent its draft runs the persistent kernel), else its
    target's (target_set: ar:persistent where its target ran it, else ar:fused)."""
    return kernels if SYSTEMS[name].needs_draft else target_set


def row_graft(name: str, graft: str) -> str:
    """The `graft` column of a system's rows: the run's setting where the system grafts, else off."""
    return graft if name in GRAFTING else "off"


def graft_settings(graft: str, graft_len: int, sizes: tuple[int, ...]) -> dict:
    """--graft-len and --graft-ngram as a grafting run's rows record them (sizes longest first);
    None under --graft off, which uses neither."""
    if graft == "off":
        return dict(graft_len=None, graft_ngram=None)
    return dict(graft_len=graft_len, graft_ngram=",".join(str(n) for n in sizes))


class LoadedPair:
    """The loaded target and draft (None when no system needs one), and what runs our systems:
    engines in this process built from the loaded weights on first use, or, for a system placed
    over several processes (--tp, --split), a pool of workers that build their own shards."""

    def __init__(self, target, draft, *, dtype: torch.dtype, device: str, seed: int = 0, max_seq_len: int = 4096,
                 tp: int = 1, split: tuple[int, int] | None = None, worker_timeout: float = DEFAULT_TIMEOUT_S,
                 draft_noise: float = 0.0, kernels: str = "torch", quant: str = "none", keep_pools: bool = False,
                 persistent_target: bool = False):
        self.target, self.draft, self.draft_noise = target, draft, draft_noise
        self.quant = quant  # the target engine's layer projections: none or awq (the draft's stay plain)
        self.kernels = kernels  # --kernels: the engines' forwards (each engine's: engine_kernels)
        self.persistent_target = persistent_target  # the target runs it where on one GPU (kernel_choice)
        self.dtype, self.device, self.seed, self.max_seq_len = dtype, device, seed, max_seq_len
        self.tp, self.split = tp, split
        self.worker_timeout = worker_timeout  # seconds without a heartbeat before a pool worker counts as stalled
        self._engines = None
        self._pools: dict = {}
        self.keep_pools = keep_pools  # every pool stays up (--interleave); else one at a time holds the GPUs

    def vocab_bound(self) -> int:
        """The larger of the pair's embedding tables: each engine takes ids up to it (accept_tokens_below)."""
        return max(m.config.vocab_size for m in (self.target, self.draft) if m is not None)

    def spans_processes(self, system: System) -> bool:
        return spans_processes(system, self.tp, self.split)

    def draft_steps(self, system_name: str, settings: SpecSettings) -> int | None:
        """SwiftSpec's d for this run: as given, else what its workers measured at start, or in
        lockstep what its engine pair measures (once, as its first decode would), so a replayed run
        draws from recordings made with the d it actually runs."""
        from swiftspec_core.decoders.swiftspec import run_draft_steps

        system = SYSTEMS[system_name]
        if settings.draft_steps or system.name != "swiftspec":
            return settings.draft_steps
        if not self.spans_processes(system):
            with torch.inference_mode():  # as run_query decodes
                return run_draft_steps(*self.models_for(system), settings)
        return self.pool_for(system, settings).draft_steps

    def models_for(self, system: System) -> tuple:
        if system.needs_draft and self.draft is None:
            raise UserError(f"system {system.name} needs a draft model")
        if not system.on_engine:
            return self.target, self.draft
        if self._engines is None:
            self._engines = (self._build(self.target, self.quant),
                             self._build(self.draft, draft=True) if self.draft is not None else None)
        return self._engines

    def _build(self, loaded, quant: str = "none", draft: bool = False):
        """The engine on the loaded model's own weights: the hf-* peers then compute on the same
        storage (fuse_projections points the model's q/k/v and gate/up at views of the engine's
        fused blocks), so each model's weights are in memory once. Under --quant awq the target's
        engine holds 4-bit AWQ tensors of its own (loading.engine_of)."""
        from swiftspec_core.kernels.awq_dequantize import use_for_prefills
        from swiftspec_core.models.loading import engine_of
        from swiftspec_core.models.transformer import engine_kernels

        use_for_prefills(engine_kernels(self.kernels, draft=False))  # the target's: the only AWQ engine
        return engine_of(loaded, dtype=self.dtype, device=self.device, max_seq_len=self.max_seq_len,
                         kernels=engine_kernels(self.kernels, draft, self.persistent_target), quant=quant,
                         vocab_bound=self.vocab_bound())

    def pool_for(self, system: System, settings: SpecSettings):
        """The workers of a multi-process system (started on first use: that is its warm-up)."""
        from swiftspec_core.runtime.service import WorkerPlan, WorkerPool

        if system.name not in self._pools:
            if not self.keep_pools:  # one pool at a time holds the GPUs
                for other in list(self._pools):
                    self._pools.pop(other).close()
            plan = WorkerPlan(system.name, self.target.name, self.draft.name if self.draft else None,
                              self.target.weights, str(self.dtype).removeprefix("torch."), self.seed,
                              self.max_seq_len, settings, self.draft_noise, self.kernels, self.quant,
                              self.persistent_target, draft_awq_twin=self._draft_awq_twin(),
                              vocab_bound=self.vocab_bound())
            split = self.split if system.name == "swiftspec" else None
            world = sum(split) if split else self.tp
            self._pools[system.name] = WorkerPool(plan, world_size=world, device=self.device, split=split,
                                                  worker_timeout=self.worker_timeout)
        return self._pools[system.name]

    def _draft_awq_twin(self) -> bool:
        """Whether the workers' draft is the AWQ target's twin, as this process's (draft_from_target)."""
        from swiftspec_core.models.noise import is_awq_twin

        return self.draft is not None and is_awq_twin(self.target, self.draft, self.quant)

    def close(self) -> None:
        close_each([self._pools.pop(name) for name in list(self._pools)])


def close_each(things, *, quietly: bool = False) -> None:
    """Close each (pairs, or worker pools), even when one before it raised; then raise the first
    error. quietly: another error is on its way out and is the one to report: a pool's error now
    is its echo (its workers got the same SIGTERM, sent to the whole process group by `timeout`, or
    it is that error again) and must not replace it."""
    first = None
    for thing in things:
        try:
            thing.close()
        except Exception as exc:
            first = first or exc
    if first is not None and not quietly:
        raise first


def run_query(system_name: str, pair: LoadedPair, prompt_ids: list[int], *, max_new_tokens: int,
              eos_ids: set[int], settings: SpecSettings, replay=None, replay_seed: int = 0) -> tuple[DecodeResult, float]:
    """Decode one prompt with one system; returns its result and the wall time of the decode
    (measured in the worker that leads, for a system that spans processes)."""
    from swiftspec_core.replay import Replay

    system = SYSTEMS[system_name]
    if pair.spans_processes(system):
        return pair.pool_for(system, settings).decode(prompt_ids, max_new_tokens=max_new_tokens, eos_ids=eos_ids,
                                                      replay=replay, replay_seed=replay_seed)
    target, draft = pair.models_for(system)
    extra = {"replay": Replay(replay, replay_seed)} if replay is not None else {}
    cuda = torch.device(pair.device).type == "cuda"
    with torch.inference_mode():
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = system.decode(target, draft if system.needs_draft else None, prompt_ids,
                               max_new_tokens=max_new_tokens, eos_ids=eos_ids, settings=settings, **extra)
        if cuda:
            torch.cuda.synchronize()
        latency = time.perf_counter() - t0
    return result, latency
