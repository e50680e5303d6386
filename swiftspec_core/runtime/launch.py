"""One process per rank: placement of the target and draft groups, start, failure, teardown.

`run_workers(fn, world_size, args, ...)` spawns world_size processes; each sets up
torch.distributed (gloo; on GPU also CuPy NCCL communicators), builds its WorkerContext and
calls fn(rank, world_size, ctx). Rank 0's return value is the run's result.

The worker contract: fn is a module-level function (spawn pickles it by name) and so is everything
in args; it builds its models on ctx.device with group=ctx.group, talks to the other group through
ctx.link, and returns picklable host data (lists, dataclasses, CPU tensors) from rank 0; other
ranks' return values are dropped. It must not swallow communication errors: a rank that raises ends
the run, and that is how a peer stuck in a collective gets released.

Placement: `split=(x, y)` puts the target on world ranks [0, x) (TP x) and the draft on [x, x + y)
(TP y), joined by a PipeLink (comm/pipe.py); without a split all ranks form one TP group (the
serial systems). On GPU world rank r drives cuda:r (gpus.py: or shares a GPU where allowed).

Failure: the first worker that raises, dies or stalls ends the run. The parent polls every 50 ms,
waits a short grace to learn whether the first error it saw was only a consequence (a peer of a
killed rank fails in its next collective), terminates and then kills every other worker, and raises
WorkerError: one line naming the root rank, its role and the cause, with every rank's traceback
in `details`. A stall is a worker whose heartbeat (heartbeat.py) is older than `worker_timeout`:
raised at once, since its peers only wait. Workers ignore SIGINT: Ctrl-C reaches the parent, whose
caller stops the workers by setting `stop` (or by the KeyboardInterrupt leaving run_workers).
"""
from __future__ import annotations

import contextlib
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
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.distributed as dist

from ..comm.gloo import TorchGroup
from ..comm.group import Group, SingleGroup
from ..comm.pipe import PipeLink, spin_for
from ..errors import Fault, UserError
from .gpus import check_gpus, gpu_of, shares_gpus
from .heartbeat import DEFAULT_TIMEOUT_S, Watch, start_beating

POLL_S = 0.05
GRACE_S = 1.0  # after a first failure: time for the root cause (a dead process) to show
STOP_S = 3.0  # SIGTERM, then this long before SIGKILL
EXIT_S = 60.0  # after every rank returned: time for teardown (barrier, comm destroy)


class WorkerError(Fault):
    """A worker raised, died or stalled. rank: the root cause; traceback: its text (None if it died
    or stalled); str(): one line; details: every rank's story, for the run's log."""

    def __init__(self, message: str, rank: int, traceback_text: str | None, exitcode: int | None,
                 details: str = ""):
        super().__init__(message, details)
        self.rank, self.traceback, self.exitcode = rank, traceback_text, exitcode


class WorkersStopped(Exception):
    """run_workers' caller set `stop`: the workers were stopped, nobody failed."""


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
    device: torch.device  # cpu, or cuda:gpu_of(rank)
    group: Group  # this rank's TP group: NCCL on GPU, gloo on CPU, SingleGroup when alone
    world: TorchGroup  # gloo over all ranks, CPU tensors: host-side agreement and barriers
    placement: Placement
    link: PipeLink | None  # to the other group; None in a serial run
    args: Any  # run_workers' args, as given
    _comms: list = field(default_factory=list, repr=False)


@contextlib.contextmanager
def sigint_ignored():
    """Ctrl-C goes to the whole foreground process group: the parent stops the workers, which must
    not each raise KeyboardInterrupt (and print a traceback) on the way. Processes started inside
    this block inherit SIGINT ignored from their first instruction, so their start-up (interpreter,
    imports: seconds) is covered too; a Ctrl-C during the block itself (milliseconds) is lost.
    Only the main thread may change a handler: elsewhere this does nothing, and the workers ignore
    SIGINT once they run (_become_worker)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _become_worker(rank: int, parent_pid: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # see sigint_ignored
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return  # not Linux glibc: the parent's cleanup is the only guard
    libc.prctl(15, f"swiftspec-r{rank}".encode())  # PR_SET_NAME: ps and /proc/PID/comm show the rank
    # A worker must not outlive a parent that was killed before it could clean up.
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)


def _setup(rank: int, placement: Placement, device: str, init_file: str, args: Any,
           pg_timeout: float) -> WorkerContext:
    world_size = placement.world_size
    if device == "cuda":
        torch.cuda.set_device(gpu_of(rank))
    else:
        # The ranks share the machine's cores; more threads than that only contend.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=pg_timeout))
    world = TorchGroup()
    tp = list(placement.tp_ranks(rank))
    split = bool(placement.draft_ranks)
    groups = [list(placement.target_ranks)] + ([list(placement.draft_ranks)] if split else [])
    comms = []
    if device == "cuda":
        from ..comm.nccl import NcclGroup, create_comms
        from .peer_group import PeerGroup

        lists = [g for g in groups if len(g) > 1] if not shares_gpus(world_size) else []  # NCCL: a GPU a rank
        comms = create_comms(lists, rank, world.pg) if lists else []  # one GPU alone needs no CuPy
        mine = [c for c, g in zip(comms, lists) if g == tp]
        # Each TP group's gloo twin (collective: every rank makes each, in order): LL's IPC handles go over it.
        hosts = [dist.new_group(g) if len(g) > 1 else None for g in groups]
        group = (NcclGroup(mine[0], host_pg=hosts[groups.index(tp)]) if mine else SingleGroup() if len(tp) == 1
                 else PeerGroup(hosts[groups.index(tp)], tp.index(rank), len(tp)))  # ranks sharing GPUs
    else:
        # new_group is collective over the world: every rank creates every group, in order.
        pgs = [dist.new_group(g) if len(g) > 1 else None for g in groups]
        pg = pgs[groups.index(tp)]
        group = TorchGroup(pg) if pg is not None else SingleGroup()
    link = None
    if split:
        link = PipeLink(os.path.dirname(init_file), rank, *placement.link_peers(rank), spin_for(device))
        for make in (link.create, link.open_inbound, link.open_outbound):
            make()
            world.barrier()  # each step after every rank's previous one (pipe.py)
    where = torch.device("cuda", gpu_of(rank)) if device == "cuda" else torch.device("cpu")
    return WorkerContext(rank, placement.role(rank), where, group, world, placement, link, args,
                         [c for c in comms if c is not None])


def _teardown(ctx: WorkerContext) -> None:
    if ctx.link is not None:
        ctx.link.close()
    if hasattr(ctx.group, "close"):  # the LL all-reduce's peer mappings go before any peer exits
        ctx.group.close()
    if ctx.device.type == "cuda":
        torch.cuda.synchronize()
    ctx.world.barrier()  # no rank leaves while a peer may still be using a communicator
    # Then leave without destroying the NCCL communicators or the process group one by one: on
    # the 2xH200 machine that teardown hung past 60 s after every run; the exit frees them all.


def _worker(rank: int, fn: Callable, args: Any, placement: Placement, device: str, results,
            init_file: str, parent_pid: int, pg_timeout: float, stamps) -> None:
    _become_worker(rank, parent_pid)
    start_beating(stamps, rank)
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
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
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


def _who(placement: Placement, rank: int) -> str:
    return f"rank {rank} ({placement.role(rank)})"


def _last_line(text: str) -> str:
    """A traceback's last line: the exception and its message."""
    lines = text.strip().splitlines()
    return lines[-1] if lines else "an error without a traceback"


def _failure(placement: Placement, errors: dict[int, str], order: list[int],
             dead: dict[int, int]) -> WorkerError:
    """The root cause among the failures seen: a process killed by a signal (a peer's exception
    may follow from it), else the first exception reported, else the first process gone.
    dead: exit codes of the processes that ended without a report."""
    signalled = sorted(r for r in dead if dead[r] < 0)
    root = signalled[0] if signalled else (order[0] if order else min(dead))
    if root in errors:
        text, exitcode = errors[root], None
        message = f"{_who(placement, root)} raised {_last_line(text)}"
    else:
        text, exitcode = None, dead[root]
        message = f"{_who(placement, root)} died: {_describe_exit(exitcode)}"
    stories = {r: f"{_who(placement, r)} raised:\n{errors[r]}" for r in order}
    stories |= {r: f"{_who(placement, r)} {_describe_exit(c)}; no Python traceback\n" for r, c in dead.items()}
    details = "".join(stories[r] for r in [root] + [r for r in stories if r != root])
    return WorkerError(message, root, text, exitcode, details)


def _stall(placement: Placement, silent: list[tuple[int, float]], watch: Watch) -> WorkerError:
    rank, quiet = silent[0]
    message = f"{_who(placement, rank)} stopped answering: no heartbeat for {quiet:.1f} s ({watch.limit(rank)})"
    details = "".join(f"{_who(placement, r)}: no heartbeat for {q:.1f} s\n" for r, q in silent)
    return WorkerError(message, rank, None, None, details)


def run_workers(fn: Callable[[int, int, WorkerContext], Any], world_size: int, args: Any = None, *,
                device: str = "cpu", split: tuple[int, int] | None = None,
                timeout: float | None = None, worker_timeout: float | None = DEFAULT_TIMEOUT_S,
                stop: threading.Event | None = None, started: threading.Event | None = None) -> Any:
    """Run fn(rank, world_size, ctx) in world_size spawned processes; return rank 0's result.

    fn and args must be picklable (fn a module-level function). Raises WorkerError when a
    worker raises, dies, or gives no heartbeat for `worker_timeout` seconds (None: never a
    stall), Fault past `timeout` seconds, WorkersStopped once `stop` is set; no worker
    outlives the call, and the rendezvous folder goes with them. `started` is set once every
    worker process exists (a caller off the main thread holds sigint_ignored until then).
    """
    if device not in ("cpu", "cuda"):
        raise UserError(f"device {device!r}: expected 'cpu' or 'cuda'")
    placement = Placement.of(world_size, split)
    if device == "cuda":
        what = f"--split {split[0]}+{split[1]}" if split else f"a run of {world_size} ranks"
        check_gpus(world_size, what)
        from ..comm.nccl import force_safe_env

        force_safe_env()  # in the parent too, so every worker inherits it from the start

    spawn = mp.get_context("spawn")
    results = spawn.Queue()
    tmpdir = tempfile.mkdtemp(prefix="swiftspec-rdzv-")
    # A collective waiting on a peer that is alive but never comes gives up after this long; a
    # dead or stopped peer is found much sooner by the poll loop and the heartbeat.
    pg_timeout = timeout if timeout is not None else 1800.0
    stamps = spawn.RawArray("d", world_size)  # each rank's last heartbeat (0: none yet)
    procs = [spawn.Process(target=_worker, name=f"swiftspec-rank{r}",
                           args=(r, fn, args, placement, device, results, os.path.join(tmpdir, "store"),
                                 os.getpid(), pg_timeout, stamps)) for r in range(world_size)]
    errors: dict[int, str] = {}
    order: list[int] = []  # ranks in the order their errors arrived
    done: dict[int, bytes | None] = {}
    gone_since: dict[int, float] = {}  # ranks whose process ended with no report (yet)
    first_failure = None
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        with sigint_ignored():
            for p in procs:
                p.start()
        if started is not None:
            started.set()
        watch = Watch(stamps, worker_timeout) if worker_timeout else None
        while len(done) < world_size:
            _drain(results, done, errors, order)
            if stop is not None and stop.is_set():
                raise WorkersStopped()
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
            if watch is not None:
                silent = watch.silent([r for r, p in enumerate(procs)
                                       if p.exitcode is None and r not in done and r not in errors])
                if silent:
                    raise _stall(placement, silent, watch)
            if deadline is not None and now > deadline:
                raise Fault(f"workers did not finish within {timeout} s "
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
