"""The launcher and the link on CPU (gloo): round trips, failures that end the run, placement."""
from __future__ import annotations

import importlib.util
import multiprocessing
import os
import signal
import time

import pytest
import torch

from swiftspec_core.errors import UserError
from swiftspec_core.runtime import heartbeat
from swiftspec_core.runtime.launch import Placement, WorkerError, parse_split, run_workers


def _our_workers() -> list[int]:
    """Pids of live children spawned by run_workers (not the multiprocessing resource tracker),
    read from /proc so the test needs no extra package."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError):
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"spawn_main" in cmd:
            pids.append(int(entry))
    return pids


def assert_no_workers_left():
    assert multiprocessing.active_children() == []
    assert _our_workers() == []


def _link_worker(rank, world_size, ctx):
    """Split 2+1: the draft (rank 2) sends a tree to both targets, target 0 answers for both."""
    msg = torch.zeros(8, dtype=torch.int32)
    seen = []
    for rnd in range(3):
        if ctx.role == "draft":
            msg.copy_(torch.arange(8, dtype=torch.int32) + 100 * rnd)
            ctx.link.send(msg)
            msg.fill_(-1)  # send() must have taken its own copy
            ctx.link.recv(msg)
            if msg.tolist() != [2 * (i + 100 * rnd) for i in range(8)]:
                raise AssertionError(f"draft got {msg.tolist()} in round {rnd}")
        else:
            ctx.link.recv(msg)
            seen.append(msg.tolist())
            # Both target ranks hold the tree; their TP group agrees on the reply.
            total = ctx.group.all_reduce(msg.clone().float())
            gathered = ctx.group.all_gather(msg[None, :2].clone())
            ctx.link.send((total.to(torch.int32)).contiguous())
            seen.append(gathered.tolist())
    return {"role": ctx.role, "group_size": ctx.group.size, "seen": seen, "draft_ranks": ctx.placement.draft_ranks}


def test_link_round_trip_and_groups():
    out = run_workers(_link_worker, 3, split=(2, 1), timeout=60)
    assert out["role"] == "target" and out["group_size"] == 2 and out["draft_ranks"] == (2,)
    for rnd in range(3):
        tree = [i + 100 * rnd for i in range(8)]
        assert out["seen"][2 * rnd] == tree
        assert out["seen"][2 * rnd + 1] == [tree[:2] + tree[:2]]
    assert_no_workers_left()


def _raising_worker(rank, world_size, ctx):
    if rank == 1:
        time.sleep(0.5)
        raise ValueError(f"boom from rank 1 at {time.time()!r}")
    ctx.world.barrier()  # rank 0 waits on a peer that never comes
    return "unreachable"


def test_ranks_along_last_dim_is_the_all_gathers_concat():
    """NcclGroup's and PeerGroup's all_gather turn [size, ..., n] rank-major parts into what
    TorchGroup's cat gives."""
    from swiftspec_core.comm.group import ranks_along_last_dim

    parts = [torch.randn(3, 2, 5, generator=torch.Generator().manual_seed(r)) for r in range(4)]
    assert torch.equal(ranks_along_last_dim(torch.stack(parts)), torch.cat(parts, dim=-1))
    assert ranks_along_last_dim(torch.zeros(2, 7)).shape == (14,)


def test_worker_exception_ends_run():
    with pytest.raises(WorkerError) as info:
        run_workers(_raising_worker, 2, timeout=120)
    ended = time.time()
    err = info.value
    assert err.rank == 1 and "rank 1" in str(err)
    assert "ValueError: boom from rank 1" in err.traceback and "_raising_worker" in err.traceback
    raised_at = float(err.traceback.rsplit(" at ", 1)[1].split()[0])
    assert ended - raised_at < 10
    assert_no_workers_left()


def _killed_worker(rank, world_size, ctx):
    ctx.world.barrier()
    if rank == 1:
        with open(ctx.args, "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGKILL)
    t = torch.ones(4)
    while True:  # rank 0 keeps talking to the dead rank
        ctx.world.all_reduce(t)


def test_killed_worker_ends_run(tmp_path):
    stamp = tmp_path / "killed_at"
    with pytest.raises(WorkerError) as info:
        run_workers(_killed_worker, 2, str(stamp), timeout=120)
    ended = time.time()
    err = info.value
    assert err.rank == 1 and err.exitcode == -signal.SIGKILL and err.traceback is None
    assert "rank 1" in str(err) and "SIGKILL" in str(err)
    assert ended - float(stamp.read_text()) < 10
    assert_no_workers_left()


def test_heartbeat_watch(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(heartbeat, "time", type("Clock", (), {"monotonic": staticmethod(lambda: clock[0])}))
    stamps = [0.0, 0.0, 0.0]
    watch = heartbeat.Watch(stamps, timeout=2.0)

    def poll_until(t, beating):
        silent = []
        while clock[0] < t:
            clock[0] += 0.25
            for r in beating:
                stamps[r] = clock[0]
            silent = watch.silent([0, 1])
        return silent

    assert poll_until(110, beating=[]) == []  # before a first beat: the start-up allowance
    assert poll_until(111, beating=[0, 1]) == []
    assert poll_until(112.5, beating=[0]) == []  # rank 1 silent for 1.5 s: within the timeout
    assert poll_until(113.25, beating=[0]) == [(1, 2.25)]
    clock[0] += 60  # the parent itself was stopped (Ctrl-Z): every rank gets a fresh timeout
    assert watch.silent([0, 1]) == []
    assert [r for r, _ in poll_until(clock[0] + 2.5, beating=[])] == [0, 1]
    never = heartbeat.Watch([0.0], timeout=2.0)  # a rank that never beats: START_S of allowance
    start = clock[0]
    while clock[0] < start + heartbeat.START_S:
        assert never.silent([0]) == []
        clock[0] += 0.5
    clock[0] += 0.5
    assert never.silent([0]) == [(0, heartbeat.START_S + 0.5)]


needs_2_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2 or importlib.util.find_spec("cupy") is None,
                                  reason="needs 2 CUDA GPUs and cupy")


def _nccl_group_worker(rank, world_size, ctx):
    """One TP group of 2 over CuPy NCCL: eager fp32 / bf16, then an all-reduce in a CUDA graph."""
    dev, out = ctx.device, {}
    for dtype in (torch.float32, torch.bfloat16):
        x = ctx.group.all_reduce(torch.full((4, 3), rank + 1.0, dtype=dtype, device=dev))
        g = ctx.group.all_gather(torch.full((2, 3), float(rank), dtype=dtype, device=dev))
        out[str(dtype)] = (x.float().cpu(), g.float().cpu())
    static = torch.zeros(4096, dtype=torch.bfloat16, device=dev)
    ctx.group.all_reduce(static)  # eager first: nothing lazy left for the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ctx.group.all_reduce(static)
    replays = []
    for k in range(3):
        static.fill_(rank + 1.0 + k)
        graph.replay()
        replays.append(static.float().cpu().unique().tolist())
    out["graph"] = replays
    return out


@needs_2_gpus
def test_nccl_group_eager_and_in_graph():
    out = run_workers(_nccl_group_worker, 2, device="cuda", timeout=300)
    for dtype in (torch.float32, torch.bfloat16):
        x, g = out[str(dtype)]
        assert torch.equal(x, torch.full((4, 3), 3.0))
        assert torch.equal(g, torch.tensor([[0.0] * 3 + [1.0] * 3] * 2))
    assert out["graph"] == [[3.0], [5.0], [7.0]]
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"
    assert_no_workers_left()


def _gpu_link_worker(rank, world_size, ctx):
    """The link between GPU processes carries host buffers; the target computes on its GPU between."""
    buf = torch.zeros(16, dtype=torch.int32)
    for rnd in range(3):
        if ctx.role == "draft":
            buf.copy_(torch.arange(16, dtype=torch.int32) + rnd)
            ctx.link.send(buf)
            ctx.link.recv(buf)
            if buf.tolist() != [2 * (i + rnd) for i in range(16)]:
                raise AssertionError(f"draft got {buf.tolist()}")
        else:
            ctx.link.recv(buf)
            ctx.link.send((buf.to(ctx.device) * 2).cpu())
    return ctx.role


@needs_2_gpus
def test_link_round_trip_between_gpu_processes():
    assert run_workers(_gpu_link_worker, 2, device="cuda", split=(1, 1), timeout=300) == "target"
    assert_no_workers_left()


@pytest.mark.parametrize("text,expected", [("1+1", (1, 1)), ("4+4", (4, 4)), (" 3 + 1 ", (3, 1))])
def test_parse_split(text, expected):
    assert parse_split(text) == expected


@pytest.mark.parametrize("text", ["0+1", "1+0", "2", "a+b", "1+1+1", "", "-1+2", "1.5+1"])
def test_parse_split_rejects(text):
    with pytest.raises(UserError, match="--split"):
        parse_split(text)


def _never_runs(rank, world_size, ctx):
    raise AssertionError("no worker should start")


@pytest.mark.skipif(torch.cuda.device_count() >= 8, reason="this machine has the GPUs")
def test_split_needs_enough_gpus(monkeypatch):
    monkeypatch.delenv("SWIFTSPEC_SHARED_GPU", raising=False)  # the rule without it (test_shared_gpu.py: with it)
    visible = torch.cuda.device_count()
    with pytest.raises(UserError, match=rf"--split 4\+4 needs 8 GPUs, {visible} visible"):
        run_workers(_never_runs, 8, device="cuda", split=(4, 4))
    assert_no_workers_left()


def test_world_must_match_split():
    with pytest.raises(UserError, match="1\\+1"):
        run_workers(_never_runs, 3, split=(1, 1))


@pytest.mark.parametrize("split", [(1, 1), (2, 2), (4, 2), (1, 3), (3, 2)])
def test_link_peers_pair_every_rank(split):
    p = Placement.of(sum(split), split)
    assert p.target_ranks == tuple(range(split[0]))
    assert p.draft_ranks == tuple(range(split[0], sum(split)))
    senders = {}
    for r in range(p.world_size):
        send_to, recv_from = p.link_peers(r)
        assert p.role(recv_from) != p.role(r)
        assert all(p.role(d) != p.role(r) for d in send_to)
        for d in send_to:
            assert d not in senders
            senders[d] = r
    # Every rank gets each message from exactly the rank it listens to.
    assert senders == {r: p.link_peers(r)[1] for r in range(p.world_size)}


def link_pair(folder, spin_s: float):
    """Both ends of a link in one process, ranks 0 and 1, each receiving from the other (the three
    steps launch.py takes after barriers)."""
    from swiftspec_core.comm.pipe import PipeLink

    a, b = PipeLink(str(folder), 0, [1], 1, spin_s), PipeLink(str(folder), 1, [0], 0, spin_s)
    for step in ("create", "open_inbound", "open_outbound"):
        getattr(a, step)()
        getattr(b, step)()
    return a, b


@pytest.mark.parametrize("spin_s", [0.0, 0.001])
def test_pipe_link_carries_long_messages_and_reports_a_gone_sender(tmp_path, spin_s):
    """Both ends in one process: a 20 KB message (past the pipe's atomic write size) arrives whole,
    each direction keeps its own stream, bad buffers are refused, and a closed sender is an error;
    blocking and spinning receivers alike."""
    a, b = link_pair(tmp_path, spin_s)
    msg = torch.arange(5000, dtype=torch.int32)
    a.send(msg)
    b.send(msg[:3].clone())
    assert torch.equal(b.recv(torch.empty(5000, dtype=torch.int32)), msg)
    assert a.recv(torch.full((3,), -1, dtype=torch.int32)).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="int32 CPU"):
        a.send(msg.float())
    a.close()
    with pytest.raises(ConnectionError, match="closed the link"):
        b.recv(torch.empty(3, dtype=torch.int32))
    b.close()


def test_a_spinning_receiver_sleeps_past_its_spin_and_still_gets_a_late_message(tmp_path):
    """The message comes 50x the spin after the receive starts: the receiver has gone to select()."""
    import threading

    a, b = link_pair(tmp_path, 0.001)
    late = threading.Timer(0.05, lambda: a.send(torch.tensor([7, 8], dtype=torch.int32)))
    late.start()
    assert b.recv(torch.zeros(2, dtype=torch.int32)).tolist() == [7, 8]
    late.join()
    a.close()
    b.close()


@pytest.mark.parametrize("link_spin_s", [0.0, 0.001])
def test_a_receive_can_spin_longer_than_its_link_but_a_blocking_link_never_spins(tmp_path, monkeypatch, link_spin_s):
    """recv(spin_s=...) (the draft's wait through the target's prefill): a spinning link polls
    through a 50 ms wait without select(); a link that does not spin (the CPU's) reads blocking,
    whatever the receive asks, and never polls."""
    import select
    import threading

    from swiftspec_core.comm import pipe

    a, b = link_pair(tmp_path, link_spin_s)
    reads = []
    real_readv = pipe.os.readv

    def counted_readv(fd, buffers):
        reads.append(fd)
        return real_readv(fd, buffers)

    def no_sleep(*args):
        raise AssertionError("slept in select() within the receive's spin")

    monkeypatch.setattr(pipe.os, "readv", counted_readv)
    monkeypatch.setattr(select, "select", no_sleep)
    late = threading.Timer(0.05, lambda: a.send(torch.tensor([7, 8], dtype=torch.int32)))
    late.start()
    assert b.recv(torch.zeros(2, dtype=torch.int32), spin_s=2.0).tolist() == [7, 8]
    late.join()
    assert (len(reads) > 1) == bool(link_spin_s)  # polled, or one blocking read
    a.close()
    b.close()
