"""awq_gemm_allreduce (cuda/awq_gemm_allreduce.cu, swiftspec_core/kernels/awq_allreduce.py): the
row-parallel AWQ GEMM with the LL all-reduce in its epilogue. CPU: its reference against float64,
the checks made before any CUDA, the TP forward's choice of it. Two ranks (two GPUs, or one under
SWIFTSPEC_SHARED_GPU=1: test_kernel_allreduce.py's own processes, gloo, no NCCL): bitwise equal
to the unfused pair (awq_gemm at its one-block-a-tile plan, then LLAllReduce) and to the rank-order
sum of the ranks' awq_gemm outputs, close to the reference, every rank the same bits; bf16 and fp16
x; the Llama-3-70B o / down shards at TP2 and a zero-padded tile, M = 1, 8, 16, output poisoned
first; rows bitwise invariant; a CUDA graph replayed with fresh inputs. Timings are printed on two
GPUs (run with -s), never asserted."""
from __future__ import annotations

import pytest
import torch

from swiftspec_core.kernels.allreduce import all_reduce_reference
from swiftspec_core.kernels.awq_allreduce import (AWQGemmAllReduce, awq_gemm_allreduce, awq_gemm_allreduce_reference,
                                                  awq_gemm_then_allreduce)
from swiftspec_core.kernels.awq_gemm import awq_gemm_reference
from swiftspec_core.models import awq
from kernel_checks import replays_with_fresh_inputs
from test_kernel_allreduce import WORLD, needs_2_ranks, spawn_ranks
from test_kernel_awq_gemm import activations, packed_layer

# [N, K_shard], group: Llama-3-70B's o_proj and down_proj at TP2 (one N: one inbox), and N = 1000
# (its last tile zero-padded past N: lines past N are neither sent nor written) in groups of 64.
ROW_PARALLEL = {"70b-tp2-o": ((8192, 4096), 128), "70b-tp2-down": ((8192, 14336), 128), "odd": ((1000, 640), 64)}
DTYPES = (torch.bfloat16, torch.float16)


# --- CPU ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("world", [2, 3])
def test_reference_matches_float64(world):
    xs = [activations(5, 256, "cpu", seed=world * 10 + r) for r in range(world)]
    ws = [awq.tile(packed_layer(136, 256, 64, "cpu", seed=world * 10 + r)) for r in range(world)]
    got = awq_gemm_allreduce_reference(xs, ws)
    # float64 but for the roundings the op has by definition: each rank's weights in x's dtype (as
    # awq_gemm_reference dequantizes them) and its GEMM written in bf16 before the sum.
    parts = [(x.double() @ awq.dequantize(w, x.dtype).double().T).to(torch.bfloat16).double() for x, w in zip(xs, ws)]
    exact = torch.stack(parts).sum(0)
    assert got.dtype == torch.bfloat16 and got.shape == (5, 136)
    err = (got.double() - exact).abs()
    bound = exact.abs() * 2 ** -8 + torch.stack(parts).abs().sum(0) * 2 ** -8 + 1e-6
    assert (err <= bound).all(), f"max error {err.max():.3g}"
    assert torch.equal(got, all_reduce_reference([awq_gemm_reference(x, w) for x, w in zip(xs, ws)]))


def test_bad_arguments_fail_before_any_cuda():
    with pytest.raises(ValueError, match="multiple of 4"):
        AWQGemmAllReduce(0, 2, exchange=lambda p: [p], n=1002)
    for rank, world in ((2, 2), (0, 1), (0, 9)):
        with pytest.raises(ValueError, match="ranks"):
            AWQGemmAllReduce(rank, world, exchange=lambda p: [p], n=1024)
    w = awq.tile(packed_layer(64, 128, 128, "cpu", seed=0))
    x = torch.zeros(4, 128, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="awq_gemm: .*CUDA device"):
        awq_gemm_allreduce(x, w, ar=None)  # the operands are checked before the inbox is asked for
    with pytest.raises(ValueError, match="awq_gemm: x has 17 rows"):
        awq_gemm_allreduce(torch.zeros(17, 128, dtype=torch.bfloat16), w, ar=None)
    with pytest.raises(ValueError, match="tiled layout"):
        awq_gemm_then_allreduce(x, packed_layer(64, 128, 128, "cpu", seed=0), ar=None)


def test_tp_forward_fuses_the_awq_row_parallel_projections(monkeypatch):
    """Under TP with the LL all-reduce, an AWQ model's o_proj / down_proj run awq_gemm_allreduce on
    the layer's tiled weight; a bf16 model's run fused_gemm_allreduce; without it, project then the
    group's all-reduce."""
    from swiftspec_core.kernels import forward

    calls = []
    monkeypatch.setattr(forward, "awq_gemm_allreduce", lambda x, w, ll: calls.append(("awq", w, ll)))
    monkeypatch.setattr(forward, "fused_gemm_allreduce", lambda x, w, ll: calls.append(("bf16", w, ll)))
    monkeypatch.setattr(forward, "weight_of", lambda p: ("tiled", p))

    class Group:
        low_latency = "ll"

        def all_reduce(self, t):
            calls.append(("all_reduce", t))
            return t

    forward._row_parallel(Group(), None, "awq")("x", "wo")
    forward._row_parallel(Group(), None, "none")("x", "wo")
    plain = Group()
    plain.low_latency = None
    forward._row_parallel(plain, lambda x, w: ("projected", w), "awq")("x", "wo")
    assert calls == [("awq", ("tiled", "wo"), "ll"), ("bf16", "wo", "ll"), ("all_reduce", ("projected", "wo"))]


# --- two ranks ---------------------------------------------------------------------------------

def _weight(name: str, rank: int) -> awq.TiledAWQWeight:
    (n, k), group = ROW_PARALLEL[name]
    return awq.tile(packed_layer(n, k, group, "cuda", seed=1000 + 16 * len(name) + rank))


def _x(name: str, m: int, rank: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    return activations(m, ROW_PARALLEL[name][0][1], "cuda", seed=seed * 16 + rank, dtype=dtype)


def _poisoned(m: int, n: int) -> torch.Tensor:
    return torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")


def _check(label: str, got: torch.Tensor, x: torch.Tensor, w, ar, failures: list) -> None:
    """got (the fused result of x, w on this rank) against the unfused pair, against the rank-order
    sum of the ranks' awq_gemm outputs, against every rank's got (all bitwise), and against the
    reference (bf16 tolerance: 1e-2 max|ref|)."""
    from test_kernel_allreduce import _all_gather, _compare

    from swiftspec_core.kernels.awq_gemm import run_planned

    failures.append(_compare(f"{label}: fused vs awq_gemm then LLAllReduce", got, awq_gemm_then_allreduce(x, w, ar)))
    parts = _all_gather(run_planned(x, w, None, None, clusters=False).cpu())
    failures.append(_compare(f"{label}: fused vs the rank-order sum of the ranks' awq_gemm", got,
                             all_reduce_reference(parts)))
    for r, other in enumerate(_all_gather(got.cpu())):
        failures.append(_compare(f"{label}: this rank's result vs rank {r}'s", got, other))
    ref = all_reduce_reference(_all_gather(awq_gemm_reference(x, w).cpu()))  # awq_gemm_allreduce_reference's sum
    err = (got.cpu().float() - ref.float()).abs().nan_to_num(float("inf")).max().item()
    tol = 1e-2 * ref.float().abs().max().item()
    failures.append(None if err <= tol else f"{label}: vs the reference max |err| {err:.4g} > {tol:.4g}")


def _eager_cases(rank: int, ar, failures: list, log: list) -> None:
    from test_kernel_allreduce import _compare

    for name, ((n, _), _) in ROW_PARALLEL.items():
        w = _weight(name, rank)
        for dtype in DTYPES:
            for m in (1, 8, 16):
                x = _x(name, m, rank, seed=m, dtype=dtype)
                out = _poisoned(m, n)
                got = awq_gemm_allreduce(x, w, ar, out=out)
                failures.append(None if got is out else f"{name} M={m}: out not written in place")
                _check(f"eager {name} {dtype} M={m}", got.clone(), x, w, ar, failures)
            # Row invariance: row 3 of M=16 alone (M=1) and at row 9 of M=12 among other rows (every
            # rank moves its own row 3 alike, as the ranks of one forward do).
            x = _x(name, 16, rank, seed=16, dtype=dtype)
            full = awq_gemm_allreduce(x, w, ar).clone()
            alone = awq_gemm_allreduce(x[3:4].contiguous(), w, ar)
            failures.append(_compare(f"{name} {dtype}: row 3 alone vs in M=16", alone[0], full[3]))
            others = _x(name, 12, rank, seed=77, dtype=dtype)
            others[9] = x[3]
            moved = awq_gemm_allreduce(others, w, ar)
            failures.append(_compare(f"{name} {dtype}: row 3 at row 9 of M=12 vs in M=16", moved[9], full[3]))
    inboxes = sorted(key[1] for key in ar._companions)
    failures.append(None if inboxes == [1000, 8192] else f"expected one inbox per N (o and down share it), got {inboxes}")
    log.append(f"rank {rank}: awq_gemm_allreduce eager cases done; inboxes by N: {inboxes}")


def _graph_cases(rank: int, ar, failures: list, log: list) -> None:
    # Calls of mixed shapes, M and x dtypes (each block's epoch advances several times a replay, and
    # rows past M keep older epochs), each on its own buffers; one graph replayed 3 times with fresh
    # inputs, every output poisoned before the replay.
    calls = [("70b-tp2-o", 1, torch.bfloat16), ("70b-tp2-down", 8, torch.float16), ("odd", 16, torch.bfloat16),
             ("70b-tp2-o", 16, torch.float16), ("70b-tp2-down", 8, torch.bfloat16), ("odd", 1, torch.float16)]
    ws = {name: _weight(name, rank) for name in ROW_PARALLEL}
    xs = [_x(name, m, rank, seed=0, dtype=dtype) for name, m, dtype in calls]
    outs = [_poisoned(m, ROW_PARALLEL[name][0][0]) for name, m, _ in calls]
    run = lambda: [awq_gemm_allreduce(x, ws[name], ar, out=out) for (name, _, _), x, out in zip(calls, xs, outs)]  # noqa: E731
    fresh = lambda replay, i: _x(calls[i][0], calls[i][1], rank, seed=100 * (replay + 1) + i, dtype=calls[i][2])  # noqa: E731

    def check(replay: int, i: int, out: torch.Tensor) -> None:
        name, m, dtype = calls[i]
        _check(f"graph replay {replay} call {i} {name} {dtype} M={m}", out.clone(), xs[i], ws[name], ar, failures)

    replays_with_fresh_inputs(run, xs, outs, fresh, check)
    log.append(f"rank {rank}: awq_gemm_allreduce graph of {len(calls)} calls replayed 3 times")


def _timings(rank: int, ar, log: list) -> None:
    from test_kernel_allreduce import _graph_us

    from swiftspec_core.kernels.awq_gemm import run_planned

    for name in ("70b-tp2-o", "70b-tp2-down"):
        w, x = _weight(name, rank), _x(name, 8, rank, seed=5, dtype=torch.bfloat16)
        out = torch.empty(8, ROW_PARALLEL[name][0][0], dtype=torch.bfloat16, device="cuda")
        fused = _graph_us(lambda: awq_gemm_allreduce(x, w, ar, out=out))
        pair = _graph_us(lambda: awq_gemm_then_allreduce(x, w, ar, out=out))
        alone = _graph_us(lambda: run_planned(x, w, None, out, clusters=False))
        log.append(f"rank {rank}: {name} M=8 TP2 (one weight, L2-warm): fused {fused:6.2f} us, awq_gemm + LL "
                   f"{pair:6.2f} us, awq_gemm alone {alone:6.2f} us (graph of 100)")


def _awq_cases(rank: int, ar, failures: list, log: list) -> None:
    _eager_cases(rank, ar, failures, log)
    _graph_cases(rank, ar, failures, log)
    if torch.cuda.device_count() >= WORLD:  # time-sliced on one GPU: no timings
        _timings(rank, ar, log)


@needs_2_ranks
def test_awq_gemm_allreduce_two_ranks(monkeypatch):
    spawn_ranks(_awq_cases, monkeypatch)
