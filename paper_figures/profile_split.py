"""Where does a split (1+1) SwiftSpec round spend its time? A diagnostic, not a result.

    PYTHONPATH=. python3 paper_figures/profile_split.py --out DIR [--prompt-len 3400 --tokens 128 --draft-steps 2
                                                      --graft off|ngram --kernels torch|fused]

On two GPUs, target on rank 0 and draft on rank 1 (random bf16 weights, a made-up replay
profile), each rank times:
  1. its own fixed-width forward (graph replay and the full Python call), with the other rank
     idle, then with both ranks running their forwards at once (no link traffic);
  2. its own side of three full requests through the link, the last under torch.profiler; in
     the second the draft times each step and each deferred cache move (settle) on its own.
Each rank writes DIR/rank<r>.txt (timings and the profiler's tables) and a chrome trace.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from swiftspec_core.decoders.base import SpecSettings, drafter_args, reuse
from swiftspec_core.decoders.drafter import Drafter
from swiftspec_core.decoders.verifier import Verifier
from swiftspec_core.replay import Replay, ReplayProfile
from swiftspec_core.runtime.disagg import draft_request, target_request
from swiftspec_core.runtime.launch import run_workers
from swiftspec_core.runtime.service import WorkerPlan, _engines
from swiftspec_core.tree import TokenTree
from timing import median_ms

PROFILE = ReplayProfile(emitted=(1, 2, 2, 3, 3, 4, 5, 6), bonus_in_tree=(True,) * 9 + (False,),
                        topk_logprobs=(-0.2, -2.5, -3.5, -4.0, -4.5, -5.0, -5.5, -6.0))


def _timed(fn) -> tuple[float, float]:
    return median_ms(fn, reps=30, warmup=5)


def _launch_ms(replay, reps: int = 30) -> float:
    """Median host ms of replay() itself (the graph's launch call, the device idle before it and
    synchronized after it, untimed): if the launch of a forward's few hundred kernel nodes takes
    a good part of a millisecond of host time, that adds to every step before the GPU starts."""
    times = []
    for _ in range(reps + 5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        replay()
        times.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(times[5:])


def _graph(fwd, rows_used: int):
    return fwd.graphs[fwd.span_for(rows_used)][0].replay


def _own_forward(ctx, target, draft, settings, prompt):
    """{name: (wall ms, gpu ms)} of this rank's forwards."""
    bs, w = settings.tree_bs, settings.tree_w
    if ctx.role == "target":
        v = reuse(target, Verifier, bs)
        v.prefill(prompt)
        n = v.cache.length
        visible = [list(range(n, n + i + 1)) for i in range(bs)]  # a chain: the densest mask
        rows = list(range(n, n + bs))
        call = lambda: v.forward(list(range(bs)), rows, rows, n, visible).argmax(-1).tolist()
        replay = _graph(v.forward, n + bs)
        return {"verify forward (call)": _timed(call), "verify forward (replay)": _timed(replay),
                "verify forward (launch, host)": (_launch_ms(replay), float("nan"))}
    d = reuse(draft, Drafter, *drafter_args(settings, w, graft=True))  # the split workers' drafter
    d.prefill(prompt)

    def step():
        d.tree, d.pending = TokenTree(5), []
        d.step(w, w)
    replay = _graph(d.forward, d.cache.length + w)
    times = {"draft step (call)": _timed(step), "draft forward (replay)": _timed(replay),
             "draft forward (launch, host)": (_launch_ms(replay), float("nan"))}
    if d.narrow is not d.forward:  # grafting: steps without a chain run the narrower forward
        times["draft forward, no chain (replay)"] = _timed(_graph(d.narrow, d.cache.length + w))
    return times


class _PartTimes:
    """Wall ms of the draft's step and settle (its deferred cache move) during one request, each
    between two device synchronizations: where a round's parallel phase goes beyond its forwards.
    The synchronizations add a little to each part; the request's own times are request 0's."""

    def __init__(self):
        self.ms: dict[str, list[float]] = {"step": [], "settle": []}
        self.saved = {name: getattr(Drafter, name) for name in self.ms}

    def __enter__(self):
        for name, method in self.saved.items():
            setattr(Drafter, name, self._timed(name, method))
        return self

    def _timed(self, name, method):
        def wrapper(drafter, *args, **kwargs):
            if name == "settle" and drafter.cache.deferred is None:
                return method(drafter, *args, **kwargs)  # nothing deferred: not a move
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = method(drafter, *args, **kwargs)
            torch.cuda.synchronize()
            self.ms[name].append((time.perf_counter() - t0) * 1e3)
            return out
        return wrapper

    def __exit__(self, *exc):
        for name, method in self.saved.items():
            setattr(Drafter, name, method)

    def line(self) -> str:
        return "draft parts (request 1, synchronized): " + ", ".join(
            f"{name} median {statistics.median(ms):.3f} ms over {len(ms)}" for name, ms in self.ms.items() if ms)


def _worker(rank: int, world_size: int, ctx):
    plan, prompt_len, tokens, out_dir = ctx.args
    out = Path(out_dir)
    target, draft = _engines(plan, ctx)
    settings = plan.settings
    prompt = [10 + (7 * i) % 1000 for i in range(prompt_len)]
    lines = [(f"rank {rank} role {ctx.role} device {ctx.device} compiled "
             f"{(target or draft).compiled} prompt {prompt_len} tokens {tokens} d {settings.draft_steps}")]
    for phase in ("alone-target", "alone-draft", "both"):
        ctx.world.barrier()
        if phase in ("both", f"alone-{ctx.role}"):
            for name, (wall, gpu) in _own_forward(ctx, target, draft, settings, prompt).items():
                lines.append(f"{phase:13s} {name:24s} wall {wall:7.2f} ms  gpu {gpu:7.2f} ms")
        ctx.world.barrier()
    for i in range(3):
        prof = (torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                   torch.profiler.ProfilerActivity.CUDA])
                if i == 2 else nullcontext())
        replay = Replay(PROFILE, i)
        parts = _PartTimes() if i == 1 and ctx.role == "draft" else nullcontext()
        ctx.world.barrier()
        t0 = time.perf_counter()
        with prof, parts:
            if ctx.role == "target":
                res = target_request(ctx, target, prompt, max_new_tokens=tokens, eos_ids=set(),
                                     settings=settings, replay=replay)
            else:
                draft_request(ctx, draft, prompt, settings=settings, draft_steps=settings.draft_steps,
                              replay=replay)
            torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        if ctx.role == "target":
            med = lambda xs: statistics.median(xs) * 1e3
            lines.append(f"request {i}{' (profiled)' if i == 2 else ''}: {len(res.tokens)} tokens in {wall:.3f} s, "
                         f"{res.rounds} rounds, acc {res.mean_accepted:.2f}, round {wall / res.rounds * 1e3:.2f} ms; "
                         f"median target {med(res.target_s):.2f} crit {med(res.draft_s):.2f} "
                         f"par {med(res.draft_parallel_s):.2f} link wait {med(res.link_wait_s):.2f} ms")
        if isinstance(parts, _PartTimes):
            lines.append(parts.line())  # a step's time includes the settle it starts with
        if i == 2:
            ka = prof.key_averages()
            lines.append(ka.table(sort_by="self_cuda_time_total", row_limit=25))
            lines.append(ka.table(sort_by="cpu_time_total", row_limit=25))
            prof.export_chrome_trace(str(out / f"trace-rank{rank}.json"))
    (out / f"rank{rank}.txt").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="llama-3-8b")
    ap.add_argument("--draft", default="llama-3.2-1b")
    ap.add_argument("--prompt-len", type=int, default=3400)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--draft-steps", type=int, default=2)
    ap.add_argument("--graft", default="off", choices=("off", "ngram"))
    ap.add_argument("--kernels", default="torch", choices=("torch", "fused"))
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    Path(a.out).mkdir(parents=True, exist_ok=True)
    settings = SpecSettings(draft_steps=a.draft_steps, graft=a.graft)
    plan = WorkerPlan("swiftspec", a.target, a.draft, "random", "bfloat16", 0, a.prompt_len + a.tokens + 64, settings,
                      kernels=a.kernels)
    run_workers(_worker, 2, (plan, a.prompt_len, a.tokens, os.path.abspath(a.out)), device="cuda", split=(1, 1))
    for r in (0, 1):
        print((Path(a.out) / f"rank{r}.txt").read_text())


if __name__ == "__main__":
    main()
