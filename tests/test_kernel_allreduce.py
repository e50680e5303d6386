"""The LL all-reduce (cuda/allreduce.cu): its reference on CPU; on two ranks (own processes, gloo,
no NCCL: two GPUs, or one under SWIFTSPEC_SHARED_GPU=1) the kernel bitwise against the reference,
eager and in a replayed CUDA graph, a clean exit after close(), and runtime/peer_group.py's
PeerGroup built on it (spawn_ranks and rank_main serve the other two-rank kernel tests too); on 2
GPUs under the launcher the NcclGroup hook and gemm_allreduce. Timings are printed (run with -s to
see them, on two GPUs), never asserted."""
from __future__ import annotations

import datetime
import importlib.util
import os
import queue
import tempfile
import traceback

import pytest
import torch
import torch.multiprocessing as mp

from swiftspec_core.comm.nccl import SAFE_ENV
from swiftspec_core.kernels.allreduce import LLAllReduce, all_reduce_reference
from swiftspec_core.runtime.gpus import gpu_of, shared_gpu

WORLD = 2
BF16_BYTES = [2, 4, 6, 8, 10, 14, 16, 18, 30, 1022, 2048, 4096, 4098, 16384, 16386, 65536, 65542, 262144,
              524286, 524288]  # odd element counts among them (2, 6, 10, ... bytes of bf16)
F32_BYTES = [4, 8, 12, 20, 4096, 4100, 16384, 65540, 262144, 524284, 524288]
TIMED_BYTES = [4096, 16384, 65536, 262144, 524288]

needs_2_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2 or importlib.util.find_spec("cupy") is None,
                                  reason="needs 2 CUDA GPUs and cupy")
# SWIFTSPEC_SHARED_GPU=1 (runtime/gpus.py): the own-process tests (no NCCL) put both ranks on one
# GPU, a process each. Their kernels then take turns (the GPU time-slices between the processes'
# contexts), so a rank's poll waits for its peer's next slice: checks only, every call slow, no timings.
needs_2_ranks = pytest.mark.skipif(torch.cuda.device_count() < (1 if shared_gpu() else 2)
                                   or importlib.util.find_spec("cupy") is None,
                                   reason="needs 2 CUDA GPUs (or 1 with SWIFTSPEC_SHARED_GPU=1) and cupy")


# ----------------------------------------------------------------------------- CPU: the reference

def naive_sum(xs: list[torch.Tensor]) -> torch.Tensor:
    """float64, rounded to fp32 after every add (what an fp32 add is: 53 bits hold the exact sum of
    two fp32 values before the one rounding), in rank order, then rounded once to the dtype."""
    acc = xs[0].double()
    for x in xs[1:]:
        acc = (acc + x.double()).float().double()
    return acc.to(xs[0].dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("world", [2, 3, 8])
def test_reference_is_the_fp32_rank_order_sum(dtype, world):
    gen = torch.Generator().manual_seed(world)
    xs = [(torch.randn(1001, generator=gen) * 10.0 ** torch.randint(-6, 7, (1001,), generator=gen)).to(dtype)
          for _ in range(world)]
    out = all_reduce_reference(xs)
    assert out.dtype == dtype and out.shape == xs[0].shape
    assert torch.equal(out.view(torch.int16 if dtype == torch.bfloat16 else torch.int32),
                       naive_sum(xs).view(torch.int16 if dtype == torch.bfloat16 else torch.int32))
    parts = torch.stack([x.double() for x in xs])
    exact = parts.sum(0)
    # One rounding to the dtype, plus fp32 rounding per add (relative to the addends, not the sum).
    bound = exact.abs() * (2 ** -8 if dtype == torch.bfloat16 else 2 ** -24) + parts.abs().sum(0) * world * 2 ** -23
    assert ((out.double() - exact).abs() <= bound).all()


def test_reference_keeps_rank_order_and_signed_zero():
    # (1 + 1e8) rounds to 1e8 in fp32: rank order gives 0 where float64 (or the reverse order) gives 1.
    xs = [torch.tensor([1.0, -0.0]), torch.tensor([1e8, -0.0]), torch.tensor([-1e8, -0.0])]
    out = all_reduce_reference(xs)
    assert out[0].item() == 0.0
    assert out[1].item() == 0.0 and torch.signbit(out[1])  # started from rank 0's -0, not from +0
    ints = [torch.arange(-50, 50, dtype=torch.bfloat16) * (r + 1) for r in range(4)]
    assert torch.equal(all_reduce_reference(ints), torch.arange(-50, 50, dtype=torch.bfloat16) * 10)


def test_bad_group_rejected_before_any_cuda():
    for rank, world in ((0, 1), (2, 2), (-1, 2), (0, 9)):
        with pytest.raises(ValueError, match="ranks"):
            LLAllReduce(rank, world, exchange=lambda p: [p])


# ----------------------------------------------------------------------------- GPU: 2 processes

def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


def _compare(name: str, got: torch.Tensor, want: torch.Tensor) -> str | None:
    """None when bitwise equal, else a line with the max error and the first mismatch."""
    got, want = got.cpu(), want.cpu()
    diff = (_bits(got) != _bits(want)).nonzero()
    if len(diff) == 0:
        return None
    i = diff[0].item()
    err = (got.double() - want.double()).abs().nan_to_num(float("inf")).max().item()
    return (f"{name}: {len(diff)} of {got.numel()} elements differ, max |err| {err:.3g}, first at {i}: "
            f"got {got[i].item()!r} want {want[i].item()!r}")


def _inputs(rank: int, seed: int, nbytes: int, dtype: torch.dtype) -> torch.Tensor:
    n = nbytes // torch.tensor([], dtype=dtype).element_size()
    gen = torch.Generator().manual_seed(seed * 16 + rank)
    x = torch.randn(n, generator=gen) * 4.0
    x[:: 7] = -0.0  # signed zeros survive only when the sum starts from rank 0's value
    return x.to(dtype)


def _all_gather(obj) -> list:
    """Every rank's obj, rank order, over the gloo world group."""
    import torch.distributed as dist

    out: list = [None] * WORLD
    dist.all_gather_object(out, obj)
    return out


def _gather(x: torch.Tensor) -> list[torch.Tensor]:
    return _all_gather(x.cpu())


def _graph_us(fn, calls: int = 100, replays: int = 10) -> float:
    """Median over replays of one graph of `calls` back-to-back fn() calls, per call."""
    from swiftspec_bench.kernel_bench import median_us

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    return median_us(graph, calls, replays)


def _eager_cases(rank, ar, failures, log):
    for dtype, sizes in ((torch.bfloat16, BF16_BYTES), (torch.float32, F32_BYTES)):
        for k, nbytes in enumerate(sizes):
            x = _inputs(rank, k, nbytes, dtype)
            want = all_reduce_reference(_gather(x))
            got = ar(x.cuda())
            torch.cuda.synchronize()
            theirs = _gather(got)
            for r, other in enumerate(theirs):
                failures.append(_compare(f"eager {dtype} {nbytes} B, rank {rank} sees rank {r}", other, want))
    # A view 2 bytes off the allocation's alignment goes through an aligned copy.
    x = _inputs(rank, 99, 4098, torch.bfloat16)
    buf = torch.zeros(x.numel() + 1, dtype=torch.bfloat16, device="cuda")
    view = buf[1:]
    view.copy_(x)
    want = all_reduce_reference(_gather(x))
    ar(view)
    failures.append(_compare("misaligned view", view, want))
    failures.append(None if buf[0].item() == 0 else "misaligned view: the element before it was written")
    log.append(f"rank {rank}: eager cases done")


def _graph_cases(rank, ar, failures, log):
    # 100 calls of mixed sizes and dtypes (so blocks' epochs advance at different rates), each on its
    # own buffer, one graph replayed 3 times with new inputs between replays.
    plan = [(torch.bfloat16, 2), (torch.bfloat16, 4096), (torch.float32, 16388), (torch.bfloat16, 65542),
            (torch.bfloat16, 6), (torch.float32, 4), (torch.bfloat16, 524288), (torch.bfloat16, 16384)]
    calls = [plan[i % len(plan)] for i in range(100)]
    bufs = [torch.zeros(nbytes // torch.tensor([], dtype=d).element_size(), dtype=d, device="cuda")
            for d, nbytes in calls]
    for b in bufs:  # eager first: nothing lazy left for the capture
        ar(b)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for b in bufs:
            ar(b)
    for replay in range(3):
        xs = [_inputs(rank, 1000 * (replay + 1) + i, nbytes, d) for i, (d, nbytes) in enumerate(calls)]
        for b, x in zip(bufs, xs):
            b.copy_(x)
        graph.replay()
        torch.cuda.synchronize()
        wants = [all_reduce_reference(parts) for parts in zip(*_all_gather(xs))]
        for i, (b, want) in enumerate(zip(bufs, wants)):
            failures.append(_compare(f"graph replay {replay} call {i} {calls[i]}", b, want))
    log.append(f"rank {rank}: graph of 100 calls replayed 3 times")


def _hook_worker(rank, world_size, ctx):
    """Under the launcher (NCCL group, gloo world): the NcclGroup opt-in, gemm_allreduce, and NCCL's
    own timings beside LL's. Every rank's failures and log come back through rank 0."""
    from swiftspec_core.comm.nccl import NCCL_SUM, nccl_dtype
    from swiftspec_core.kernels.allreduce import exchange_over

    failures: list = []
    log: list[str] = []
    group = ctx.group
    group.use_low_latency(LLAllReduce(group.rank, group.size, exchange_over(ctx.world.pg, [0, 1]), max_bytes=64 * 1024))
    try:
        x = _inputs(rank, 7, 64 * 1024, torch.bfloat16)
        want = all_reduce_reference(_gather(x))
        failures.append(_compare("NcclGroup.all_reduce through LL", group.all_reduce(x.cuda()), want))
        big = group.all_reduce(torch.full((40000,), rank + 1.0, device="cuda"))  # 160 KB: NCCL
        failures.append(None if big.eq(3.0).all().item() else "NcclGroup.all_reduce above max_bytes")
        for nbytes in TIMED_BYTES:  # NCCL itself, for the log beside the LL numbers
            buf = torch.zeros(nbytes // 2, dtype=torch.bfloat16, device="cuda")

            def nccl_all_reduce():
                group.comm.allReduce(buf.data_ptr(), buf.data_ptr(), buf.numel(), nccl_dtype(buf.dtype),
                                     NCCL_SUM, torch.cuda.current_stream().cuda_stream)

            nccl_all_reduce()
            us = _graph_us(nccl_all_reduce)
            log.append(f"rank {rank}: nccl all-reduce bf16 {nbytes:>6} B: {us:6.2f} us/call (graph of 100)")
        _gemm_cases(rank, group.low_latency, failures, log)
    finally:
        group.close()
    torch.cuda.synchronize()
    return _all_gather(([f for f in failures if f], log))


def _gemm_cases(rank, ar, failures, log):
    if importlib.util.find_spec("swiftspec_core.kernels.gemm") is None:
        log.append(f"rank {rank}: gemm_allreduce skipped: kernels/gemm.py not in this tree")
        return
    from swiftspec_core.kernels.allreduce import gemm_allreduce
    from swiftspec_core.kernels.gemm import gemm

    # Llama-3-8B at TP2, M = 8: o_proj [4096, 4096 / 2], down_proj [4096, 14336 / 2]; out poisoned.
    for name, k in (("o_proj", 2048), ("down_proj", 7168)):
        gen = torch.Generator().manual_seed(rank + 31 * k)
        xk = torch.randn(8, k, generator=gen).to(torch.bfloat16).cuda()
        wk = (torch.randn(4096, k, generator=gen) / k ** 0.5).to(torch.bfloat16).cuda()
        want = all_reduce_reference(_gather(gemm(xk, wk)))
        out = torch.full((8, 4096), float("nan"), dtype=torch.bfloat16, device="cuda")
        got = gemm_allreduce(xk, wk, ar, out=out)
        failures.append(_compare(f"gemm_allreduce {name}", got, want))
        both = _graph_us(lambda: gemm_allreduce(xk, wk, ar, out=out))
        alone = _graph_us(lambda: gemm(xk, wk, out=out))
        log.append(f"rank {rank}: gemm_allreduce {name} M=8 TP2: {both:6.2f} us/call, gemm alone {alone:6.2f}")


def _ll_cases(rank: int, ar, failures: list, log: list) -> None:
    log.append(f"rank {rank}: inbox of {ar.blocks} blocks x {ar.chunk} lines, capacity {ar.capacity}")
    _eager_cases(rank, ar, failures, log)
    _graph_cases(rank, ar, failures, log)
    for nbytes in TIMED_BYTES if torch.cuda.device_count() >= WORLD else ():  # time-sliced: no timings
        buf = torch.zeros(nbytes // 2, dtype=torch.bfloat16, device="cuda")
        us = _graph_us(lambda: ar(buf))
        log.append(f"rank {rank}: ll all-reduce bf16 {nbytes:>6} B: {us:6.2f} us/call (graph of 100)")
    ar.close()  # the caller's close() after this one checks it is idempotent


def _peer_group_cases(rank: int, ar, failures: list, log: list) -> None:
    """runtime/peer_group.py's PeerGroup (the TP group of ranks that share a GPU): an all-reduce larger than
    its inbox (in pieces, an odd tail), both dtypes, and all_gather, eager and in a replayed graph."""
    import torch.distributed as dist

    from swiftspec_core.runtime.peer_group import PIECE_BYTES, PeerGroup

    group = PeerGroup(dist.group.WORLD, rank, WORLD)
    try:
        for dtype, nbytes in ((torch.bfloat16, 2 * PIECE_BYTES + 4098), (torch.float32, PIECE_BYTES + 12)):
            x = _inputs(rank, 5, nbytes, dtype)
            want = all_reduce_reference(_gather(x))
            failures.append(_compare(f"PeerGroup.all_reduce {dtype} {nbytes} B", group.all_reduce(x.cuda()), want))
        parts = [torch.randn(3, 1000, generator=torch.Generator().manual_seed(r)).to(torch.bfloat16) for r in range(WORLD)]
        want = torch.cat(parts, dim=-1)
        failures.append(_compare("PeerGroup.all_gather", group.all_gather(parts[rank].cuda()), want))
        x = torch.zeros(4, 1000, dtype=torch.float32, device="cuda")
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            gathered = group.all_gather(x)
            group.all_reduce(x)
        for replay in range(2):
            fresh = [torch.randn(4, 1000, generator=torch.Generator().manual_seed(10 * replay + r)) for r in range(WORLD)]
            x.copy_(fresh[rank])
            graph.replay()
            torch.cuda.synchronize()
            failures.append(_compare(f"PeerGroup graph replay {replay}: all_gather", gathered, torch.cat(fresh, dim=-1)))
            failures.append(_compare(f"PeerGroup graph replay {replay}: all_reduce", x, all_reduce_reference(fresh)))
    finally:
        group.close()
    log.append(f"rank {rank}: PeerGroup cases done")


def rank_main(rank: int, init_file: str, results, cases) -> None:
    """One rank's process (spawn_ranks): its GPU, a gloo world, an LLAllReduce over it, then
    cases(rank, ar, failures, log) (a module-level function); the report on results."""
    os.environ.update(SAFE_ENV)  # before CUDA, NCCL or CuPy start
    import torch.distributed as dist

    failures: list = []
    log: list[str] = []
    try:
        torch.cuda.set_device(gpu_of(rank))
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD,
                                timeout=datetime.timedelta(seconds=180))
        from swiftspec_core.kernels.allreduce import exchange_over

        ar = LLAllReduce(rank, WORLD, exchange_over(dist.group.WORLD, [0, 1]), timeout_s=30.0)
        try:
            cases(rank, ar, failures, log)
        finally:
            ar.close()
        torch.cuda.synchronize()
        dist.barrier()
        results.put((rank, [f for f in failures if f], log, None))
        dist.destroy_process_group()
    except BaseException:
        results.put((rank, [f for f in failures if f], log, traceback.format_exc()))
        raise
    # Returning here runs the interpreter's normal exit (no NCCL in this process, whose teardown
    # is known to hang: the launcher skips it): a hang here is what the parent times out on.


def spawn_ranks(cases, monkeypatch) -> None:
    """Run rank_main(rank, .., cases) in WORLD spawned processes (CUDA device rank, or both on
    device 0 under SWIFTSPEC_SHARED_GPU). Prints every rank's log and failures; fails on a raise, a
    mismatch, a missing report or an unclean exit."""
    for k, v in SAFE_ENV.items():
        monkeypatch.setenv(k, v)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main, args=(r, os.path.join(tmp, "store"), results, cases))
                 for r in range(WORLD)]
        for p in procs:
            p.start()
        reports = {}
        try:
            while len(reports) < WORLD:
                # Once a rank raised, its peer is likely stuck waiting for it: a short grace only.
                wait = 10 if any(r[2] for r in reports.values()) else 300
                try:
                    rank, failures, log, error = results.get(timeout=wait)
                except queue.Empty:
                    if any(r[2] for r in reports.values()):
                        break
                    pytest.fail(f"no report within {wait} s from ranks {sorted(set(range(WORLD)) - set(reports))}")
                reports[rank] = (failures, log, error)
            raised = any(r[2] for r in reports.values())
            for p in procs:
                p.join(5 if raised else 60)
            exits = [p.exitcode for p in procs]
        finally:
            for p in procs:
                if p.is_alive():
                    p.kill()
                    p.join(10)
    for rank in sorted(reports):
        failures, log, error = reports[rank]
        print("\n".join(log))
        for f in failures[:20]:
            print("FAIL", f)
        if error:
            print(f"rank {rank} raised:\n{error}")
    assert all(not reports[r][2] for r in reports), "a rank raised (traceback above)"
    assert all(not reports[r][0] for r in reports), f"{sum(len(reports[r][0]) for r in reports)} mismatches"
    assert exits == [0] * WORLD, f"exit codes {exits} (None: hung at exit after close())"


@needs_2_ranks
def test_ll_allreduce_two_gpus(monkeypatch):
    spawn_ranks(_ll_cases, monkeypatch)


@needs_2_ranks
def test_peer_group(monkeypatch):
    spawn_ranks(_peer_group_cases, monkeypatch)


@needs_2_gpus
def test_nccl_group_low_latency_hook_and_gemm_allreduce():
    from swiftspec_core.runtime.launch import run_workers

    reports = run_workers(_hook_worker, WORLD, device="cuda", timeout=300)
    for failures, log in reports:
        print("\n".join(log))
        for f in failures[:20]:
            print("FAIL", f)
    assert all(not failures for failures, _ in reports)
