"""Long-lived workers that decode requests one at a time: one process per GPU (or CPU rank).

    pool = WorkerPool(plan, world_size=2, device="cuda", split=(1, 1))
    result, latency_s = pool.decode(prompt_ids, max_new_tokens=256, eos_ids=set())
    pool.close()

Each worker builds its engines once (its shard of the target, the draft, or both), warms up with
one request (capturing its CUDA graphs, and measuring swiftspec's d by the rule lockstep uses,
base.measure_draft_steps, when it is not given), then serves. A measured d follows the requests
after that: each served request's own rounds set the next one's (base.fitting_draft_steps, the
same rule); each request carries the d it runs with, and its row records it.
Rank 0 takes requests from the parent and broadcasts them; it times each request and returns the
result. A worker that raises, dies or stalls ends the pool with that worker's error (launch.py),
which `decode` raises within about the worker timeout (a dead pool is never waited on for the
request timeouts, which only bound a live pool that never answers). Closing a pool with a request
in flight (the caller gave up on it: Ctrl-C) stops the workers at once instead of waiting for the
answer.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, replace

import torch
import torch.distributed as dist

from ..decoders import DECODERS
from ..decoders.base import (WARMUP_PROMPT, WARMUP_TOKENS, SpecSettings, fitting_draft_steps,
                             measure_draft_steps)
from ..errors import Fault
from ..replay import Replay, ReplayProfile
from .disagg import draft_request, target_request
from .heartbeat import DEFAULT_TIMEOUT_S
from .launch import WorkersStopped, run_workers, sigint_ignored

@dataclass(frozen=True)
class WorkerPlan:
    system: str  # ar | chain | tree | swiftspec (swiftspec needs a split)
    target: str  # model specs, as load_engine takes them
    draft: str | None
    weights: str
    dtype: str  # torch dtype name, e.g. "bfloat16"
    seed: int
    max_seq_len: int
    settings: SpecSettings
    draft_noise: float = 0.0  # the draft's relative weight noise (models/noise.py)
    kernels: str = "torch"  # --kernels (each engine's: transformer.engine_kernels)
    quant: str = "none"  # the target's layer projections: none or awq (models/awq.py); the draft's stay plain
    persistent_target: bool = False  # under persistent: the target runs it where its group is one GPU
    draft_awq_twin: bool = False  # the draft is the AWQ target's dequantized twin (models/noise.py)
    vocab_bound: int = 0  # the pair's larger vocabulary: each engine takes ids up to it (accept_tokens_below)


@dataclass(frozen=True)
class Request:
    prompt: list[int]
    max_new_tokens: int
    eos_ids: frozenset
    replay: ReplayProfile | None = None
    replay_seed: int = 0
    draft_steps: int | None = None  # swiftspec's d for this request (the pool's current one)


def _engines(plan: WorkerPlan, ctx):
    from transformers.utils import logging as hf_logging

    from ..kernels.awq_dequantize import use_for_prefills
    from ..models.loading import load_engine
    from ..models.transformer import engine_kernels

    hf_logging.disable_progress_bar()  # a worker's stderr is the run's terminal: errors only
    dtype = getattr(torch, plan.dtype)
    kernels_of = lambda draft: engine_kernels(  # noqa: E731
        plan.kernels, draft, persistent_target=plan.persistent_target and ctx.group.size == 1)
    use_for_prefills(kernels_of(False))  # the target's: the only AWQ engine
    if kernels_of(ctx.role == "draft") == "fused" and ctx.group.size > 1:  # their LL all-reduce
        from ..kernels.allreduce import LLAllReduce, exchange_over

        group = ctx.group
        exchange = exchange_over(group.host_pg, list(range(group.size)))
        group.use_low_latency(LLAllReduce(group.rank, group.size, exchange))
    load = lambda spec, draft, **how: load_engine(  # noqa: E731
        spec, weights=plan.weights, dtype=dtype, device=ctx.device, seed=plan.seed, group=ctx.group,
        max_seq_len=plan.max_seq_len, kernels=kernels_of(draft), vocab_bound=plan.vocab_bound, **how)
    split = bool(ctx.placement.draft_ranks)
    target = load(plan.target, False, quant=plan.quant) if ctx.role == "target" else None
    needs_draft = plan.system != "ar" and (ctx.role == "draft" or not split)
    draft = load(plan.draft, True, noise=plan.draft_noise, awq_twin=plan.draft_awq_twin) if needs_draft else None
    return target, draft


def _serve_one(ctx, plan: WorkerPlan, target, draft, req: Request, settings: SpecSettings):
    replay = Replay(req.replay, req.replay_seed) if req.replay else None
    kwargs = dict(max_new_tokens=req.max_new_tokens, eos_ids=set(req.eos_ids))
    if ctx.role == "draft":
        draft_request(ctx, draft, req.prompt, settings=settings, draft_steps=settings.draft_steps, replay=replay)
        return None
    if ctx.device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    if ctx.placement.draft_ranks:
        result = target_request(ctx, target, req.prompt, settings=settings, replay=replay, **kwargs)
        result.draft_steps = settings.draft_steps
    else:
        result = DECODERS[plan.system](target, draft, req.prompt, settings=settings, replay=replay, **kwargs)
    if ctx.device.type == "cuda":
        torch.cuda.synchronize()
    return result, time.perf_counter() - t0


def _broadcast(ctx, obj):
    box = [obj]
    dist.broadcast_object_list(box, src=0, group=ctx.world.pg)
    return box[0]


def _serve(rank: int, world_size: int, ctx):
    plan, requests, responses = ctx.args
    target, draft = _engines(plan, ctx)
    settings = plan.settings
    split = bool(ctx.placement.draft_ranks)
    # Warm-up: captures the graphs; with a split and no d given, d = 1 measures the draft step
    # against the verification.
    warm = Request(WARMUP_PROMPT, WARMUP_TOKENS, frozenset())
    probe = replace(settings, draft_steps=settings.draft_steps or 1)
    out = _serve_one(ctx, plan, target, draft, warm, probe)
    d = settings.draft_steps
    if split and d is None and rank == 0:
        d = measure_draft_steps(out[0])
    settings = replace(settings, draft_steps=_broadcast(ctx, d))
    if rank == 0:
        responses.put(("ready", settings.draft_steps))
    while True:
        req = _broadcast(ctx, requests.get() if rank == 0 else None)
        if req is None:
            return None
        out = _serve_one(ctx, plan, target, draft, req, replace(settings, draft_steps=req.draft_steps))
        if rank == 0:
            result, latency = out
            responses.put(("done", (result, latency)))


class WorkerPool:
    def __init__(self, plan: WorkerPlan, *, world_size: int, device: str, split: tuple[int, int] | None = None,
                 start_timeout: float = 1800.0, worker_timeout: float | None = DEFAULT_TIMEOUT_S):
        import multiprocessing as mp

        if plan.system == "swiftspec" and split is None:
            raise ValueError("swiftspec across processes needs a split (target+draft groups)")
        ctx = mp.get_context("spawn")
        self.requests, self.responses = ctx.Queue(), ctx.Queue()
        self.error: BaseException | None = None
        self.in_flight = False  # a request was sent and its answer not taken
        self._stop, started = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._run, args=(plan, world_size, device, split, worker_timeout,
                                                               started), daemon=True)
        try:
            with sigint_ignored():  # the workers start in self.thread, not in the main thread
                self.thread.start()
                while not started.wait(0.01) and self.thread.is_alive():
                    pass
            _, self.draft_steps = self._wait("ready", start_timeout)
            # A d the workers measured follows the requests' own steps (decode).
            self.adapt_draft_steps = plan.system == "swiftspec" and plan.settings.draft_steps is None
        except BaseException:  # Ctrl-C included: no worker may outlive a pool its caller never got
            self._abort()
            raise

    def _run(self, plan, world_size, device, split, worker_timeout, started):
        try:
            run_workers(_serve, world_size, (plan, self.requests, self.responses), device=device, split=split,
                        worker_timeout=worker_timeout, stop=self._stop, started=started)
        except BaseException as e:  # re-raised in the caller's thread by _wait
            self.error = e

    def _wait(self, kind: str, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            try:
                got, payload = self.responses.get(timeout=0.1)
            except queue.Empty:
                got = None
            if got is not None:
                assert got == kind, (got, kind)
                return got, payload
            alive = self.thread.is_alive()  # sampled first: a thread that ended has set its error
            if self.error is not None:
                raise self.error
            if not alive:
                raise Fault("the workers ended without an answer")
            if time.monotonic() > deadline:
                self._abort()
                raise Fault(f"the workers are alive but gave no answer within {timeout:g} s")

    def decode(self, prompt: list[int], *, max_new_tokens: int, eos_ids: set[int],
               replay: ReplayProfile | None = None, replay_seed: int = 0, timeout: float = 1800.0):
        """(DecodeResult, latency in seconds measured on rank 0). Runs at self.draft_steps, which
        the replay profile must match; afterwards a measured d is refitted (fitting_draft_steps)."""
        self.requests.put(Request(list(prompt), max_new_tokens, frozenset(eos_ids), replay, replay_seed,
                                  self.draft_steps))
        self.in_flight = True
        answer = self._wait("done", timeout)[1]
        self.in_flight = False
        fit = fitting_draft_steps(answer[0]) if self.adapt_draft_steps else None
        if fit is not None:
            self.draft_steps = fit
        return answer

    def _abort(self) -> None:
        """Stop the workers now (launch kills them and removes the rendezvous folder)."""
        self._stop.set()
        if self.thread.ident is not None:  # started
            self.thread.join()

    def close(self) -> None:
        """End the workers: after their current request, or at once when its answer was given up
        on. Raises the pool's error, if any (a second time when `decode` already raised it)."""
        if self.thread.is_alive() and self.in_flight:
            self._abort()
        elif self.thread.is_alive():
            self.requests.put(None)
            self.thread.join(120)
            if self.thread.is_alive():
                self._abort()
        if self.error is not None and not isinstance(self.error, WorkersStopped):
            raise self.error
