"""fused_gemm_allreduce (cuda/gemm_allreduce.cu, swiftspec_core/kernels/gemm_epilogue.py): the
row-parallel GEMM with the LL all-reduce in its epilogue. CPU: its reference against float64, the
per-rank rounding it shares with the unfused pair, the checks made before any CUDA, the kernel
table, the companion inboxes' bookkeeping. Two ranks (two GPUs, or one under
SWIFTSPEC_SHARED_GPU=1: own processes, gloo): bitwise equal to the unfused pair (gemm, then
LLAllReduce) and to the reference sum of the ranks' gemm outputs, on the Llama-3-8B and 3.2-1B o /
down shapes at TP2 for M = 1, 8, 16, eager and in a CUDA graph replayed with fresh inputs; rows
bitwise invariant. 2 GPUs (the launcher, NCCL): a TP2 fused forward bitwise equal with the unfused
pair in it. Timings are printed (run with -s), never asserted."""
from __future__ import annotations

import importlib.util
import re

import pytest
import torch

from swiftspec_core.kernels.allreduce import LLAllReduce, all_reduce_reference
from swiftspec_core.kernels.build import CUDA_DIR
from swiftspec_core.kernels.gemm import UNROLL, gemm_reference
from swiftspec_core.kernels.gemm_epilogue import GemmAllReduce, fused_gemm_allreduce, gemm_allreduce_reference
from kernel_checks import replays_with_fresh_inputs
from test_kernel_allreduce import needs_2_ranks, spawn_ranks

WORLD = 2
# [N, K_shard] of o_proj and down_proj at TP2: Llama-3-8B (hidden 4096, ffn 14336) and Llama-3.2-1B
# (hidden 2048, ffn 8192). o and down of one model share N, so they share one inbox.
ROW_PARALLEL = {"8b-o": (4096, 2048), "8b-down": (4096, 7168), "1b-o": (2048, 1024), "1b-down": (2048, 4096)}

needs_2_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2 or importlib.util.find_spec("cupy") is None,
                                  reason="needs 2 CUDA GPUs and cupy")


# --- CPU ---------------------------------------------------------------------------------------

def shards(n: int, k: int, m: int, world: int, seed: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    xs = [torch.randn(m, k, generator=gen).to(torch.bfloat16) for _ in range(world)]
    ws = [(torch.randn(n, k, generator=gen) / k ** 0.5).to(torch.bfloat16) for _ in range(world)]
    return xs, ws


@pytest.mark.parametrize("world", [2, 3])
def test_reference_matches_float64(world):
    xs, ws = shards(96, 264, 9, world, seed=world)
    got = gemm_allreduce_reference(xs, ws)
    # float64 throughout but for the rounding the op has by definition: each rank's GEMM is written
    # in bf16 before the sum.
    parts = [(x.double() @ w.double().T).to(torch.bfloat16).double() for x, w in zip(xs, ws)]
    exact = torch.stack(parts).sum(0)
    assert got.dtype == torch.bfloat16 and got.shape == (9, 96)
    err = (got.double() - exact).abs()
    # one bf16 rounding of the sum, and one ulp of a part where fp32 and float64 round a tie apart
    bound = exact.abs() * 2 ** -8 + torch.stack(parts).abs().sum(0) * 2 ** -8 + 1e-6
    assert (err <= bound).all(), f"max error {err.max():.3g}"
    same = (got == exact.to(torch.bfloat16)).double().mean().item()
    assert same >= 0.97, f"only {same:.3f} of the elements equal float64 rounded once"


def test_reference_rounds_each_ranks_gemm_before_the_sum():
    # rank 0's dot product is 1 + 2^-8, written by gemm as bf16 1.0 (a tie, to even); rank 1's is
    # 2^-8; 1.0 + 2^-8 rounds to 1.0 again. Summed before rounding it would be 1 + 2^-7, exact in bf16.
    bf = torch.bfloat16
    xs = [torch.tensor([[1.0, 1.0]], dtype=bf), torch.tensor([[1.0, 0.0]], dtype=bf)]
    ws = [torch.tensor([[1.0, 2 ** -8]], dtype=bf), torch.tensor([[2 ** -8, 0.0]], dtype=bf)]
    assert gemm_allreduce_reference(xs, ws).item() == 1.0
    assert sum(x.float() @ w.float().T for x, w in zip(xs, ws)).to(bf).item() == 1 + 2 ** -7


def test_bad_arguments_fail_before_any_cuda():
    with pytest.raises(ValueError, match="multiple of 4"):
        GemmAllReduce(0, 2, exchange=lambda p: [p], n=1002, nt=4)
    for rank, world in ((2, 2), (0, 1), (0, 9)):
        with pytest.raises(ValueError, match="ranks"):
            GemmAllReduce(rank, world, exchange=lambda p: [p], n=1024, nt=4)
    x, w = torch.zeros(4, 64, dtype=torch.bfloat16), torch.zeros(32, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="gemm_allreduce: .*CUDA device"):
        fused_gemm_allreduce(x, w, ar=None)  # the operands are checked before the inbox is asked for
    with pytest.raises(ValueError, match="gemm_allreduce: x has 17 rows"):
        fused_gemm_allreduce(torch.zeros(17, 64, dtype=torch.bfloat16), w, ar=None)


def test_kernel_table_matches_gemms():
    kernels = re.findall(r"^GEMM_ALLREDUCE_KERNEL\((\d+), (\d+)\)", (CUDA_DIR / "gemm_allreduce.cu").read_text(),
                         re.MULTILINE)
    assert {int(nt): int(u) for nt, u in kernels} == UNROLL  # every nt gemm's plan gives, gemm's unroll


class _Inbox:
    closed_count = 0

    def __init__(self, *made_with):
        self.made_with = made_with

    def close(self):
        _Inbox.closed_count += 1


def test_companions_are_made_once_per_key_and_closed_with_the_all_reduce():
    # The bookkeeping alone (no CUDA): an LLAllReduce's fields as its constructor leaves them.
    ar = object.__new__(LLAllReduce)
    ar.rank, ar.world, ar.exchange, ar.timeout_s, ar._companions = 1, 2, "exchange", 7.0, {}
    ar._inbox = 1  # open (an address)
    first = ar.companion(("gemm_allreduce", 4096, 4), _Inbox)
    assert first.made_with == (1, 2, "exchange", 7.0)
    assert ar.companion(("gemm_allreduce", 4096, 4), _Inbox) is first  # o_proj and down_proj: one inbox
    other = ar.companion(("gemm_allreduce", 2048, 2), _Inbox)
    assert other is not first
    ar._inbox = None  # as if freed: PeerInbox.close returns at once
    _Inbox.closed_count = 0
    ar.close()
    assert _Inbox.closed_count == 2 and not ar._companions
    with pytest.raises(ValueError, match="closed"):
        ar.companion(("gemm_allreduce", 4096, 4), _Inbox)


# --- 2 GPUs ------------------------------------------------------------------------------------

def _rank_operands(name: str, m: int, rank: int, seed: int) -> torch.Tensor:
    """x [m, K] of this rank (its K shard), seeded by (seed, rank)."""
    gen = torch.Generator().manual_seed(seed * 16 + rank)
    return torch.randn(m, ROW_PARALLEL[name][1], generator=gen).to(torch.bfloat16).cuda()


def _rank_weight(name: str, rank: int) -> torch.Tensor:
    n, k = ROW_PARALLEL[name]
    gen = torch.Generator(device="cuda").manual_seed(1000 + 16 * len(name) + rank)
    return (torch.randn(n, k, generator=gen, device="cuda") / k ** 0.5).to(torch.bfloat16)


def _poisoned(m: int, n: int) -> torch.Tensor:
    return torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")


def _check(label: str, got: torch.Tensor, x: torch.Tensor, w: torch.Tensor, ar, failures: list) -> None:
    """got (the fused result of x, w on this rank) against the unfused pair, against the sum of the
    ranks' gemm outputs in rank order, against the other rank's got (all bitwise), and against the
    fp32 reference (bf16 tolerance: 1e-2 max|ref|, one ulp where the sums straddle a rounding)."""
    from test_kernel_allreduce import _all_gather, _compare

    from swiftspec_core.kernels.allreduce import gemm_allreduce
    from swiftspec_core.kernels.gemm import gemm

    unfused = gemm_allreduce(x, w, ar)
    parts = _all_gather(gemm(x, w).cpu())
    failures.append(_compare(f"{label}: fused vs gemm then LLAllReduce", got, unfused))
    failures.append(_compare(f"{label}: fused vs all_reduce_reference of the ranks' gemm", got, all_reduce_reference(parts)))
    for r, other in enumerate(_all_gather(got.cpu())):
        failures.append(_compare(f"{label}: this rank's result vs rank {r}'s", got, other))
    ref = all_reduce_reference(_all_gather(gemm_reference(x, w).cpu()))
    err = (got.cpu().float() - ref.float()).abs().nan_to_num(float("inf")).max().item()
    tol = 1e-2 * ref.float().abs().max().item()
    failures.append(None if err <= tol else f"{label}: vs the fp32 reference max |err| {err:.4g} > {tol:.4g}")


def _eager_cases(rank: int, ar, failures: list, log: list) -> None:
    from test_kernel_allreduce import _compare

    for name, (n, _) in ROW_PARALLEL.items():
        w = _rank_weight(name, rank)
        for m in (1, 8, 16):
            x = _rank_operands(name, m, rank, seed=m)
            out = _poisoned(m, n)
            got = fused_gemm_allreduce(x, w, ar, out=out)
            failures.append(None if got is out else f"{name} M={m}: out not written in place")
            _check(f"eager {name} M={m}", got.clone(), x, w, ar, failures)
        # Row invariance: row 3 of M=16 alone (M=1) and at row 9 of M=12 among other rows (every
        # rank moves its own row 3 alike, as the ranks of one forward do).
        x = _rank_operands(name, 16, rank, seed=16)
        full = fused_gemm_allreduce(x, w, ar).clone()
        alone = fused_gemm_allreduce(x[3:4].contiguous(), w, ar)
        failures.append(_compare(f"{name}: row 3 alone vs in M=16", alone[0], full[3]))
        others = _rank_operands(name, 12, rank, seed=77)
        others[9] = x[3]
        moved = fused_gemm_allreduce(others, w, ar)
        failures.append(_compare(f"{name}: row 3 at row 9 of M=12 vs in M=16", moved[9], full[3]))
    kinds = sorted(k[1:] for k in ar._companions)
    failures.append(None if [n for n, _ in kinds] == [2048, 4096]
                    else f"expected one inbox per N (o and down share it), got (N, NT) {kinds}")
    log.append(f"rank {rank}: eager cases done; inboxes (N, NT): {kinds}")


def _graph_cases(rank: int, ar, failures: list, log: list) -> None:
    # Calls of mixed shapes and M (each instance's blocks advance their epochs several times a
    # replay, and rows past M keep older epochs), each on its own buffers; one graph replayed 3
    # times with fresh inputs, every output poisoned before the replay.
    calls = [("8b-o", 1), ("8b-down", 8), ("1b-o", 16), ("1b-down", 1), ("8b-o", 16), ("8b-down", 8),
             ("1b-o", 8), ("1b-down", 16), ("8b-down", 1), ("1b-o", 1)]
    ws = {name: _rank_weight(name, rank) for name in ROW_PARALLEL}
    xs = [torch.zeros(m, ROW_PARALLEL[name][1], dtype=torch.bfloat16, device="cuda") for name, m in calls]
    outs = [_poisoned(m, ROW_PARALLEL[name][0]) for name, m in calls]
    run = lambda: [fused_gemm_allreduce(x, ws[name], ar, out=out) for (name, _), x, out in zip(calls, xs, outs)]  # noqa: E731
    fresh = lambda replay, i: _rank_operands(calls[i][0], calls[i][1], rank, seed=100 * (replay + 1) + i)  # noqa: E731

    def check(replay: int, i: int, out: torch.Tensor) -> None:
        name, m = calls[i]
        _check(f"graph replay {replay} call {i} {name} M={m}", out.clone(), xs[i], ws[name], ar, failures)

    replays_with_fresh_inputs(run, xs, outs, fresh, check)
    log.append(f"rank {rank}: graph of {len(calls)} calls replayed 3 times")


def _timings(rank: int, ar, log: list) -> None:
    from test_kernel_allreduce import _graph_us

    from swiftspec_core.kernels.allreduce import gemm_allreduce
    from swiftspec_core.kernels.gemm import gemm

    for name in ("8b-o", "8b-down", "1b-o", "1b-down"):
        w, x = _rank_weight(name, rank), _rank_operands(name, 8, rank, seed=5)
        out = torch.empty(8, ROW_PARALLEL[name][0], dtype=torch.bfloat16, device="cuda")
        fused = _graph_us(lambda: fused_gemm_allreduce(x, w, ar, out=out))
        pair = _graph_us(lambda: gemm_allreduce(x, w, ar, out=out))
        alone = _graph_us(lambda: gemm(x, w, out=out))
        log.append(f"rank {rank}: {name} M=8 TP2: fused {fused:6.2f} us, gemm + LL {pair:6.2f} us, "
                   f"gemm alone {alone:6.2f} us (graph of 100)")


def _forward_case(rank: int, ctx, failures: list, log: list) -> None:
    """A TP2 engine under --kernels fused: its graph-replayed forward with the fused epilogue
    bitwise equal to the same forward with the unfused pair (gemm, then LLAllReduce), and to its
    eager run. The engine's N = 512 runs gemm_allreduce_nt1."""
    from engine_fixtures import VOCAB, prompt, target_state
    from test_gpu_fused import kernel_args
    from test_kernel_allreduce import _compare

    from swiftspec_core.graphs import PaddedForward
    from swiftspec_core.kernels import allreduce, forward
    from swiftspec_core.models.weights import build_engine

    args = kernel_args()
    model = build_engine(args, {k: v.float() for k, v in target_state(0, 1.0, args).items()}, dtype=torch.bfloat16,
                         device="cuda", group=ctx.group, max_seq_len=1024, compile=False, kernels="fused")
    gen = torch.Generator().manual_seed(3)
    n, size = 40, 8
    tokens = torch.randint(0, VOCAB, (size,), generator=gen).tolist()
    visible = [list(range(n, n + i + 1)) for i in range(size)]  # a chain
    step = (tokens, [n + i for i in range(size)], list(range(n, n + size)), n, visible)

    def logits(graph: bool) -> torch.Tensor:
        cache = model.new_cache(256)
        model.prefill(prompt(n), cache)
        return PaddedForward(model, cache, size, size, graph=graph)(*step).clone()

    fused_graph, fused_eager = logits(True), logits(False)
    saved = forward.fused_gemm_allreduce
    forward.fused_gemm_allreduce = allreduce.gemm_allreduce  # the unfused pair, same signature
    try:
        pair_graph = logits(True)
    finally:
        forward.fused_gemm_allreduce = saved
    failures.append(_compare("TP2 forward: fused epilogue vs gemm then LLAllReduce (graphs)", fused_graph, pair_graph))
    failures.append(_compare("TP2 forward: graph replay vs eager", fused_graph, fused_eager))
    log.append(f"rank {rank}: TP2 fused forward compared (inboxes (N, NT): "
               f"{sorted(k[1:] for k in ctx.group.low_latency._companions)})")


def _own_process_cases(rank: int, ar, failures: list, log: list) -> None:
    _eager_cases(rank, ar, failures, log)
    _graph_cases(rank, ar, failures, log)


@needs_2_ranks
def test_fused_gemm_allreduce_two_ranks(monkeypatch):
    """The kernel's cases in own processes (gloo, no NCCL): two GPUs, or one shared."""
    spawn_ranks(_own_process_cases, monkeypatch)


def _worker(rank: int, world_size: int, ctx):
    from test_kernel_allreduce import _all_gather

    from swiftspec_core.kernels.allreduce import exchange_over

    failures: list = []
    log: list[str] = []
    group = ctx.group
    group.use_low_latency(LLAllReduce(rank, world_size, exchange_over(ctx.world.pg, [0, 1]), timeout_s=60.0))
    try:
        _timings(rank, group.low_latency, log)
        _forward_case(rank, ctx, failures, log)
    finally:
        group.close()  # the companions' inboxes with the LL one, before the launcher's teardown
    torch.cuda.synchronize()
    return _all_gather(([f for f in failures if f], log))


@needs_2_gpus
def test_fused_gemm_allreduce_two_gpus():
    """Under the launcher (an NCCL group: one rank a GPU): the timings and a TP2 fused forward."""
    from swiftspec_core.runtime.launch import run_workers

    failures, logs = zip(*run_workers(_worker, WORLD, device="cuda", timeout=600))  # per rank
    failed = [f for rank_failures in failures for f in rank_failures]
    print("\n".join([line for log in logs for line in log] + [f"FAIL {f}" for f in failed[:30]]))
    assert not failed, f"{len(failed)} mismatches (above)"
