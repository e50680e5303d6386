"""One process per rank: placement of the target and draft groups, start, failure, teardown.

`run_workers(fn, world_size, args, ...)` spawns world_size processes; each sets up
torch.distributed (gloo; on GPU also CuPy NCCL communicators), builds its WorkerContext and
calls fn(rank, world_size, ctx). Rank 0's return value is the run's result.

The worker contract: fn is a module-level function (spawn pickles it by name) and so is
everything in args; it builds its models on ctx.device with group=ctx.group, talks to the other
group through ctx.link, and returns picklable host data (lists, dataclasses, CPU tensors) from
rank 0; other ranks' return values are dropped. It must not swallow communication errors: a
rank that raises ends the run, and that is how a peer stuck in a collective gets released.

Placement: `split=(x, y)` puts the target on world ranks [0, x) (TP x) and the draft on
[x, x + y) (TP y), joined by a Link; without a split all ranks form one TP group (the serial
systems). On GPU world rank r drives cuda:r.

Failure: the first worker that raises or dies ends the run. The parent polls every 50 ms, waits
a short grace to learn whether the first error it saw was only a consequence (a peer of a killed
rank fails in its next collective), terminates and then kills every other worker, and raises
WorkerError naming the root rank with its traceback text.
"""
from __future__ import annotations

import ctypes
import datetime
import multiprocessing as mp
import os
import pickle
import queue as queue_mod
import re
import shutil
import signal
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.distributed as dist

from ..comm.gloo import TorchGroup, TorchLink
from ..comm.group import Group, SingleGroup
from ..errors import UserError

POLL_S = 0.05
GRACE_S = 1.0  # after a first failure: time for the root cause (a dead process) to show
STOP_S = 3.0  # SIGTERM, then this long before SIGKILL
EXIT_S = 60.0  # after every rank returned: time for teardown (barrier, comm destroy)


class WorkerError(RuntimeError):
    """A worker raised or died. rank: the root cause; traceback: its text (None if it died)."""

    def __init__(self, message: str, rank: int, traceback_text: str | None, exitcode: int | None):
        super().__init__(message)
        self.rank, self.traceback, self.exitcode = rank, traceback_text, exitcode


def parse_split(text: str) -> tuple[int, int]:
    """'x+y' -> (x, y): x target GPUs, y draft GPUs, both at least 1."""
    m = re.fullmatch(r"\s*(\d+)\s*\+\s*(\d+)\s*", str(text))
    if not m:
        raise UserError(f"--split {text!r}: expected TARGET+DRAFT GPU counts, like 1+1 or 4+4")
    x, y = int(m.group(1)), int(m.group(2))
    if x < 1 or y < 1:
        raise UserError(f"--split {text!r}: the target and the draft need at least one GPU each")
    return x, y


@dataclass(frozen=True)
class Placement:
    """Which world ranks run the target and which the draft (none: a serial system)."""

    world_size: int
    target_ranks: tuple[int, ...]
    draft_ranks: tuple[int, ...] = ()

    @classmethod
    def of(cls, world_size: int, split: tuple[int, int] | None) -> "Placement":
        if world_size < 1:
            raise UserError(f"a run needs at least one process, got {world_size}")
        if split is None:
            return cls(world_size, tuple(range(world_size)))
        x, y = split
        if x < 1 or y < 1 or x + y != world_size:
            raise UserError(f"--split {x}+{y} needs a world of {x + y} processes, got {world_size}")
        return cls(world_size, tuple(range(x)), tuple(range(x, x + y)))

    def role(self, rank: int) -> str:
        return "draft" if rank in self.draft_ranks else "target"

    def tp_ranks(self, rank: int) -> tuple[int, ...]:
        return self.draft_ranks if rank in self.draft_ranks else self.target_ranks

    def link_peers(self, rank: int) -> tuple[list[int], int]:
        """(send_to, recv_from) of a rank: each rank receives every message from exactly one rank
        of the other group (local rank i from the other's local i mod its size), and sends to
        the ranks that receive from it. With equal group sizes these are pairs."""
        mine, other = ((self.target_ranks, self.draft_ranks) if self.role(rank) == "target"
                       else (self.draft_ranks, self.target_ranks))
        i = mine.index(rank)
        send_to = [r for j, r in enumerate(other) if j % len(mine) == i]
        return send_to, other[i % len(other)]


@dataclass
class WorkerContext:
    """What fn(rank, world_size, ctx) gets in each worker."""

    rank: int
    role: str  # "target" or "draft" (every rank of a serial run is "target")
    device: torch.device  # cpu, or cuda:rank
    group: Group  # this rank's TP group: NCCL on GPU, gloo on CPU, SingleGroup when alone
    world: TorchGroup  # gloo over all ranks, CPU tensors: host-side agreement and barriers
    placement: Placement
    link: Any | None  # TorchLink / NcclLink to the other group; None in a serial run
    args: Any  # run_workers' args, as given
    _comms: list = field(default_factory=list, repr=False)


def _die_with_parent(parent_pid: int) -> None:
    # A worker must not outlive a parent that was killed before it could clean up.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return  # not Linux glibc: the parent's cleanup is the only guard
    if os.getppid() != parent_pid:
        os._exit(1)


def _setup(rank: int, placement: Placement, device: str, init_file: str, args: Any,
           pg_timeout: float) -> WorkerContext:
    world_size = placement.world_size
    if device == "cuda":
        torch.cuda.set_device(rank)
    else:
        # The ranks share the machine's cores; more threads than that only contend.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=pg_timeout))
    world = TorchGroup()
    tp = list(placement.tp_ranks(rank))
    split = bool(placement.draft_ranks)
    groups = [list(placement.target_ranks)] + ([list(placement.draft_ranks)] if split else [])
    comms, link = [], None
    if device == "cuda":
        from ..comm.nccl import NcclGroup, NcclLink, create_comms

        lists = [g for g in groups if len(g) > 1] + ([list(range(world_size))] if split else [])
        comms = create_comms(lists, rank, world.pg) if lists else []  # one GPU alone needs no CuPy
        mine = [c for c, g in zip(comms, lists) if g == tp]
        group = NcclGroup(mine[0]) if mine else SingleGroup()
        if split:
            link = NcclLink(comms[-1], *placement.link_peers(rank))
            link.connect()
    else:
        # new_group is collective over the world: every rank creates every group, in order.
        pgs = [dist.new_group(g) if len(g) > 1 else None for g in groups]
        pg = pgs[groups.index(tp)]
        group = TorchGroup(pg) if pg is not None else SingleGroup()
        if split:
            link = TorchLink(*placement.link_peers(rank))
    where = torch.device("cuda", rank) if device == "cuda" else torch.device("cpu")
    return WorkerContext(rank, placement.role(rank), where, group, world, placement, link, args,
                         [c for c in comms if c is not None])


def _teardown(ctx: WorkerContext) -> None:
    if ctx.link is not None:
        ctx.link.close()
    if ctx.device.type == "cuda":
        torch.cuda.synchronize()
    ctx.world.barrier()  # no rank leaves while a peer may still be using a communicator
    # Then leave without destroying the NCCL communicators or the process group one by one: on
    # the 2xH200 machine that teardown hung past 60 s after every run; the exit frees them all.


def _worker(rank: int, fn: Callable, args: Any, placement: Placement, device: str, results,
            init_file: str, parent_pid: int, pg_timeout: float) -> None:
    _die_with_parent(parent_pid)
    try:
        ctx = _setup(rank, placement, device, init_file, args, pg_timeout)
        out = fn(rank, placement.world_size, ctx)
        # Pickled here so an unpicklable result is this rank's error, with its traceback.
        results.put(("ok", rank, pickle.dumps(out) if rank == 0 else None))
        _teardown(ctx)
        results.close()
        results.join_thread()
        os._exit(0)
    except BaseException:
        results.put(("error", rank, traceback.format_exc()))
        results.close()
        results.join_thread()  # the report must reach the pipe before the process goes
        os._exit(1)  # skip interpreter teardown: it can hang on communicators peers abandoned


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code} without reporting a result"


def _stop(procs: list) -> None:
    """Terminate, then kill, every worker still alive; join them all."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + STOP_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def _drain(results, done: dict, errors: dict, order: list) -> None:
    """Read every report waiting (the first wait up to POLL_S)."""
    wait = POLL_S
    while True:
        try:
            kind, rank, payload = results.get(timeout=wait) if wait else results.get_nowait()
        except queue_mod.Empty:
            return
        wait = 0
        if kind == "ok":
            done[rank] = payload
        else:
            errors[rank] = payload
            order.append(rank)


def _failure(placement: Placement, errors: dict[int, str], order: list[int],
             dead: dict[int, int]) -> WorkerError:
    """The root cause among the failures seen: a process killed by a signal (a peer's exception
    may follow from it), else the first exception reported, else the first process gone.
    dead: exit codes of the processes that ended without a report."""
    signalled = sorted(r for r in dead if dead[r] < 0)
    root = signalled[0] if signalled else (order[0] if order else min(dead))
    if root in errors:
        text, exitcode = errors[root], None
        message = f"rank {root} ({placement.role(root)}) raised:\n{text}"
    else:
        text, exitcode = None, dead[root]
        message = f"rank {root} ({placement.role(root)}) died: {_describe_exit(exitcode)}; no Python traceback"
    others = [f"rank {r} raised {errors[r].strip().splitlines()[-1]}" for r in order if r != root]
    others += [f"rank {r} {_describe_exit(c)}" for r, c in dead.items() if r != root]
    if others:
        message += "\nthen: " + "; ".join(others)
    return WorkerError(message, root, text, exitcode)


def run_workers(fn: Callable[[int, int, WorkerContext], Any], world_size: int, args: Any = None, *,
                device: str = "cpu", split: tuple[int, int] | None = None,
                timeout: float | None = None) -> Any:
    """Run fn(rank, world_size, ctx) in world_size spawned processes; return rank 0's result.

    fn and args must be picklable (fn a module-level function). Raises WorkerError when a
    worker raises or dies, TimeoutError past `timeout` seconds; no worker outlives the call.
    """
    if device not in ("cpu", "cuda"):
        raise UserError(f"device {device!r}: expected 'cpu' or 'cuda'")
    placement = Placement.of(world_size, split)
    if device == "cuda":
        visible = torch.cuda.device_count()
        if visible < world_size:
            what = f"--split {split[0]}+{split[1]}" if split else f"a run of {world_size} ranks"
            raise UserError(f"{what} needs {world_size} GPUs, {visible} visible")
        from ..comm.nccl import force_safe_env

        force_safe_env()  # in the parent too, so every worker inherits it from the start

    spawn = mp.get_context("spawn")
    results = spawn.Queue()
    tmpdir = tempfile.mkdtemp(prefix="swiftspec-rdzv-")
    pg_timeout = timeout if timeout is not None else 1800.0
    procs = [spawn.Process(target=_worker, name=f"swiftspec-rank{r}",
                           args=(r, fn, args, placement, device, results, os.path.join(tmpdir, "store"),
                                 os.getpid(), pg_timeout)) for r in range(world_size)]
    errors: dict[int, str] = {}
    order: list[int] = []  # ranks in the order their errors arrived
    done: dict[int, bytes | None] = {}
    gone_since: dict[int, float] = {}  # ranks whose process ended with no report (yet)
    first_failure = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        for p in procs:
            p.start()
        while len(done) < world_size:
            _drain(results, done, errors, order)
            now = time.monotonic()
            for r, p in enumerate(procs):
                if p.exitcode is not None and r not in done and r not in errors:
                    gone_since.setdefault(r, now)
                else:
                    gone_since.pop(r, None)
            # A nonzero exit is a failure at once; a zero exit only once its report, which
            # leaves the process before it ends, would have arrived.
            gone = {r for r, t in gone_since.items() if procs[r].exitcode != 0 or now - t > GRACE_S}
            if errors or gone:
                first_failure = first_failure or now
                if now - first_failure >= GRACE_S:
                    raise _failure(placement, errors, order, {r: procs[r].exitcode for r in gone})
            if deadline is not None and now > deadline:
                raise TimeoutError(f"workers did not finish within {timeout} s "
                                   f"(ranks {sorted(set(range(world_size)) - set(done))} still running)")
        for p in procs:
            p.join(EXIT_S)
        bad = [f"rank {r}: {'still running' if p.exitcode is None else _describe_exit(p.exitcode)}"
               for r, p in enumerate(procs) if p.exitcode != 0]
        if bad:
            warnings.warn("workers returned but did not exit cleanly: " + "; ".join(bad), RuntimeWarning)
        return pickle.loads(done[0])
    finally:
        _stop(procs)
        results.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
