"""`swiftspec-bench kernels`: time every case of the matrix (kernel_shapes.py) on the GPU.

Timing: a case's call is warmed up, CALLS calls are captured in one torch CUDA graph, and the
graph is replayed REPLAYS times, each replay timed with CUDA events; a row is the median per call.
A whole forward is one graph already (graphs.make_forward, as the decoders run it): its replays
are timed one by one. Weights and caches are rotated over enough copies that the calls of one
replay read more than twice the L2 cache, as a forward's layers do (each reads its own).

Cases that need a process group (the all-reduces, a forward at tp >= 2) run in tp spawned
processes (runtime/launch.run_workers: gloo file-store rendezvous, CuPy NCCL, multicast off),
when the machine has the GPUs; everything else runs here on one GPU at its shard's shapes.
"""
from __future__ import annotations

import gc
import importlib
import math
import statistics
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

from swiftspec_core.errors import UserError
from swiftspec_core.graphs import POSITION, PREFIX, ROW, VISIBLE, capture, make_forward, spans

from . import kernel_table
from .kernel_shapes import BF16, NEEDS_GROUP, Case, Options, gemm_shape, kv_bytes, message_bytes, shard_args

CALLS = 20  # calls captured in one graph (more where the rotation needs more copies)
REPLAYS = 10
WARMUPS = 2  # eager rounds of the calls before the capture (graphs.capture)
MAX_COPIES = 128
SEED = 0


class Skipped(Exception):
    """A case that cannot run here; str() says why (it goes to kernels.md's notes)."""


def median_us(graph, calls: int, replays: int = REPLAYS) -> float:
    """Median us per call of `graph` (holding `calls` calls) over `replays` timed replays."""
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(times)


def time_calls(call, calls: int, before_timing=None) -> float:
    """call(i) runs the i-th call (its inputs: copy i mod the copies). before_timing: run once
    between capture and timing (ranks of a group line up there)."""
    graph, _ = capture(lambda: [call(i) for i in range(calls)], warmups=WARMUPS)
    if before_timing is not None:
        before_timing()
    try:
        return median_us(graph, calls)
    finally:
        del graph


def _copies(nbytes: int) -> int:
    """Copies of an input of `nbytes` whose reads in a row exceed twice the L2 cache."""
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or 50 << 20
    return max(1, min(MAX_COPIES, math.ceil(2 * l2 / nbytes)))


def _ours(module: str, name: str):
    """Our kernel entry `name` of swiftspec_core.kernels.<module>, or Skipped if it is not there."""
    try:
        return getattr(importlib.import_module(f"swiftspec_core.kernels.{module}"), name)
    except (ImportError, AttributeError) as exc:
        raise Skipped(f"swiftspec_core.kernels.{module}.{name} is not available ({exc})") from None


def _randn(*shape, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale


# ---- ops on one GPU: each returns (call(i), calls) ----

def _gemm(case: Case):
    n, k, has_bias = gemm_shape(shard_args(case.model, case.tp), case.projection)
    copies = _copies(BF16 * n * k)
    ws = [_randn(n, k, scale=0.02) for _ in range(copies)]
    bias = _randn(n, scale=0.02) if has_bias else None
    x = _randn(case.m, k)
    if case.impl == "ours":
        gemm, out = _ours("gemm", "gemm"), torch.empty(case.m, n, device="cuda", dtype=torch.bfloat16)
        return (lambda i: gemm(x, ws[i % copies], bias, out=out)), max(CALLS, copies)
    return (lambda i: F.linear(x, ws[i % copies], bias)), max(CALLS, copies)


def chain_block(context: int, m: int, device="cuda") -> torch.Tensor:
    """graphs.py's staged block [m, 4 + m] of a chain of m tree tokens after `context` verified
    ones at cache rows context.. (each sees its ancestors: the densest tree mask of m tokens).
    Unused visible slots repeat the token's own row, as PaddedForward fills them."""
    block = torch.zeros(m, VISIBLE + m, dtype=torch.long)
    for j in range(m):
        block[j, POSITION] = block[j, ROW] = context + j
        block[j, PREFIX] = context
        block[j, VISIBLE:] = context + j
        block[j, VISIBLE:VISIBLE + j + 1] = torch.arange(context, context + j + 1)
    return block.to(device)


def sdpa_masked(q, k, v, mask, n_kv: int) -> torch.Tensor:
    """SDPA under a boolean mask in grouped_attention's layout (the G query heads of a kv head as
    G*T rows of one batch entry, no key copies). q [T, H, hd]; k, v [L, KV, hd]; mask [T, L]."""
    T, H, hd = q.shape
    G = H // n_kv
    qg = q.view(T, n_kv, G, hd).permute(1, 2, 0, 3).reshape(n_kv, G * T, hd)  # [KV, G*T, hd]
    o = F.scaled_dot_product_attention(qg, k.transpose(0, 1), v.transpose(0, 1), attn_mask=mask.repeat(G, 1))
    return o.view(n_kv, G, T, hd).permute(2, 0, 1, 3).reshape(T, H * hd)


def _attention(case: Case):
    from swiftspec_core.models.rope import apply_rope, rope_tables
    from swiftspec_core.models.transformer import grouped_attention
    from swiftspec_core.tree import tree_mask

    a, m, ctx = shard_args(case.model, case.tp), case.m, case.context
    H, KV, hd = a.n_heads, a.n_kv_heads, a.head_dim
    rows = ctx + m + 1  # the prefix, the tree, a padding row: one layer of the cache
    span = next(s for s in spans(rows) if s >= ctx + m)  # the span the forward's graph reads
    copies = _copies(kv_bytes(a, ctx + m))
    caches = [(_randn(rows, KV, hd), _randn(rows, KV, hd)) for _ in range(copies)]
    qkv = _randn(m, (H + 2 * KV) * hd)
    cos, sin = rope_tables(a, ctx + m, device="cuda")
    block = chain_block(ctx, m)
    if case.impl == "ours":
        tree_attention, out = _ours("attention", "tree_attention"), torch.empty(m, H * hd, device="cuda",
                                                                             dtype=torch.bfloat16)
        return (lambda i: tree_attention(qkv, block, cos, sin, *caches[i % copies], span, H, KV, out=out)), \
            max(CALLS, copies)
    attend = sdpa_masked if case.impl == "sdpa" else grouped_attention
    mask = tree_mask(ctx, span, [list(range(ctx, ctx + j + 1)) for j in range(m)], "cuda")  # once per forward
    q, pos = qkv[:, :H * hd].view(m, H, hd), block[:, POSITION]

    def call(i):  # q's RoPE too: our kernel applies it inside
        k, v = caches[i % copies]
        return attend(apply_rope(q, cos[pos], sin[pos]), k[:span], v[:span], mask, KV)
    return call, max(CALLS, copies)


def _rmsnorm(case: Case):
    from swiftspec_core.models.transformer import rms_norm

    a = shard_args(case.model, case.tp)
    h, m, w = _randn(case.m, a.dim), _randn(case.m, a.dim), _randn(a.dim)
    if case.impl == "ours":
        add_rmsnorm, x, y = _ours("norm", "add_rmsnorm"), torch.empty_like(h), torch.empty_like(h)
        return (lambda i: add_rmsnorm(h, m, w, a.norm_eps, x_out=x, y_out=y)), CALLS
    return (lambda i: rms_norm(h + m, w, a.norm_eps)), CALLS


def _swiglu(case: Case):
    a = shard_args(case.model, case.tp)
    gate_up = _randn(case.m, 2 * a.ffn_dim)
    if case.impl == "ours":
        swiglu, out = _ours("norm", "swiglu"), torch.empty(case.m, a.ffn_dim, device="cuda", dtype=torch.bfloat16)
        return (lambda i: swiglu(gate_up, out=out)), CALLS

    def call(i):
        gate, up = gate_up.chunk(2, dim=-1)
        return F.silu(gate) * up
    return call, CALLS


LOCAL_OPS = {"gemm": _gemm, "attention": _attention, "rmsnorm": _rmsnorm, "swiglu": _swiglu}


def measure_local(case: Case) -> float:
    """Median us per call of a case that runs on this process's one GPU."""
    call, calls = LOCAL_OPS[case.group](case)
    return time_calls(call, calls)


# ---- a whole forward ----

def build_shard(model: str, tp: int, max_seq_len: int, group=None):
    """One rank's engine of `model` at TP tp with random bf16 weights, made at its shard's shape
    directly (a 70B model's full state would not fit one GPU to be sharded)."""
    from swiftspec_core.models.weights import build_engine, random_state

    local = shard_args(model, tp)
    need = local.weight_bytes(BF16)
    have = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    if need > 0.9 * have:
        raise Skipped(f"{model} at tp {tp}: {need / 1e9:.0f} GB of weights per GPU do not fit {have / 1e9:.0f} GB")
    engine = build_engine(local, random_state(local, torch.bfloat16, "cuda", seed=SEED), dtype=torch.bfloat16,
                          device="cuda", max_seq_len=max_seq_len)
    if group is not None and group.size > 1:  # what build_engine sets when it shards a full state
        engine.group = group
        engine.vocab_start = group.rank * local.vocab_size
        engine.full_vocab = shard_args(model, 1).vocab_size
    return engine


def use_kernels(engine, impl: str) -> None:
    """The engine's kernel set for `impl`: ours = fused, torch = today's torch path."""
    if hasattr(engine, "use_kernels"):
        engine.use_kernels("fused" if impl == "ours" else "torch")
    elif impl == "ours":
        raise Skipped("Transformer.use_kernels (the fused kernel set) is not available")


def time_forward(engine, width: int, context: int, before_timing=None) -> float:
    """Median us of one graph replay of the width-`width` forward (a chain of `width` tree tokens
    after `context` cached ones: every token sees its ancestors)."""
    cache = engine.new_cache(context + width)
    cache.length = context
    forward = make_forward(engine, cache, width, width)
    rows = list(range(context, context + width))
    forward([0] * width, rows, rows, context, [rows[:j + 1] for j in range(width)])  # stages the inputs
    graph, _ = forward.graphs[forward.span_for(context + width)]
    if before_timing is not None:
        before_timing()
    us = median_us(graph, 1)
    del forward, cache
    return us


def measure_forwards(cases: list[Case], group=None, before_timing=None) -> list[tuple[Case, float | str]]:
    """The forward and draft-step cases, one engine per (model, tp), built once."""
    results = []
    by_engine: dict[tuple, list[Case]] = defaultdict(list)
    for c in cases:
        by_engine[(c.model, c.tp)].append(c)
    for (model, tp), todo in by_engine.items():
        engine = None
        try:
            engine = build_shard(model, tp, max(c.context + c.m for c in todo) + 1, group)
            for impl in dict.fromkeys(c.impl for c in todo):
                try:
                    use_kernels(engine, impl)
                    results += [(c, time_forward(engine, c.m, c.context, before_timing))
                                for c in todo if c.impl == impl]
                except Skipped as why:
                    results += [(c, str(why)) for c in todo if c.impl == impl]
        except Skipped as why:
            results += [(c, str(why)) for c in todo]  # the engine could not be built
        finally:
            del engine
            _release()
    return results


def _release() -> None:
    gc.collect()
    torch.cuda.empty_cache()


# ---- cases across tp processes ----

def _group_worker(rank: int, world: int, ctx) -> list[tuple[Case, float | str]]:
    """Every rank runs the same cases in the same order (their collectives pair up); rank 0's
    times are the rows."""
    import torch.distributed as dist

    cases: list[Case] = ctx.args
    line_up = ctx.world.barrier
    ll = None

    def low_latency():
        nonlocal ll
        if ll is None:
            def exchange(payload: bytes) -> list[bytes]:
                got = [None] * world
                dist.all_gather_object(got, payload, group=ctx.world.pg)
                return got
            LLAllReduce = _ours("allreduce", "LLAllReduce")
            ll = LLAllReduce(rank, world, exchange, max_bytes=max(message_bytes(c) for c in cases
                                                                  if c.group in NEEDS_GROUP))
        return ll

    torch.manual_seed(SEED + rank)
    results = []
    try:
        for case in [c for c in cases if c.group in NEEDS_GROUP]:
            try:
                call, calls = _group_call(case, ctx.group, low_latency)
                results.append((case, time_calls(call, calls, before_timing=line_up)))
            except Skipped as why:
                results.append((case, str(why)))
            _release()
        results += measure_forwards([c for c in cases if c.group in ("forward", "draft_step")], ctx.group,
                                    before_timing=line_up)
    finally:
        if ll is not None:
            ll.close()  # before the process group goes (the design notes: a hang at exit otherwise)
    return results


def _group_call(case: Case, group, low_latency):
    """(call(i), calls) of an all-reduce or a GEMM + all-reduce on this rank."""
    a = shard_args(case.model, case.tp)
    if case.op == "allreduce":
        # Zeros: a sum of zeros in place stays zero over any number of replays (random values
        # would double each call and overflow); its time does not depend on the values.
        x = torch.zeros(case.m, a.dim, device="cuda", dtype=torch.bfloat16)
        reduce = low_latency() if case.impl == "ours" else group.all_reduce
        return (lambda i: reduce(x)), CALLS
    n, k, _ = gemm_shape(a, case.projection)
    copies = _copies(BF16 * n * k)
    ws, x = [_randn(n, k, scale=0.02) for _ in range(copies)], _randn(case.m, k)
    if case.impl == "ours":
        gemm_allreduce, ar = _ours("allreduce", "gemm_allreduce"), low_latency()
        return (lambda i: gemm_allreduce(x, ws[i % copies], ar)), max(CALLS, copies)
    return (lambda i: group.all_reduce(F.linear(x, ws[i % copies]))), max(CALLS, copies)


def measure_group(cases: list[Case], tp: int) -> list[tuple[Case, float | str]]:
    """Cases that need tp processes; each is Skipped when the machine has fewer GPUs."""
    if torch.cuda.device_count() < tp:
        return [(c, f"needs {tp} GPUs, {torch.cuda.device_count()} visible") for c in cases]
    from swiftspec_core.runtime.launch import run_workers

    _release()
    return run_workers(_group_worker, tp, cases, device="cuda")


# ---- the command ----

def run(opts: Options, cases: list[Case]) -> tuple[Path, int, list[str]]:
    """Measure every case not already in opts.out (same device), writing both files after each.
    -> (the csv's path, rows written this run, the notes)."""
    from swiftspec_core.runtime.floor import copy_bandwidth

    from .runner import package_commit

    if not torch.cuda.is_available():
        raise UserError("no CUDA GPU here: swiftspec-bench kernels times GPU kernels")
    device = torch.cuda.get_device_name()
    kept = kernel_table.read_rows(opts.out)
    others = {r["device"] for r in kept} - {device}
    if others:
        raise UserError(f"--out {opts.out} holds rows measured on {', '.join(sorted(others))}, "
                        f"not on this {device}: choose another --out")
    done = {kernel_table.row_key(r) for r in kept}
    todo = [c for c in cases if c.key not in done]
    bandwidth = copy_bandwidth()
    meta = dict(device=device, commit=package_commit(), bandwidth=bandwidth,
                timing=f"{CALLS}+ calls captured in one CUDA graph, median of {REPLAYS} replays (CUDA "
                       "events); a forward: one replay per call")
    rows, skipped = list(kept), []

    def record(case: Case, outcome: float | str) -> None:
        if isinstance(outcome, str):
            skipped.append((case, outcome))
        else:
            rows.append(kernel_table.make_row(case, outcome, bandwidth, device, meta["commit"]))
        kernel_table.write(opts.out, rows, notes(skipped), meta)

    torch.manual_seed(SEED)
    local = [c for c in todo if c.processes == 1 and c.group in LOCAL_OPS]
    for case in local:
        try:
            record(case, measure_local(case))
        except Skipped as why:
            record(case, str(why))
        _release()
    for case, outcome in measure_forwards([c for c in todo if c.processes == 1 and c not in local]):
        record(case, outcome)
    for tp in sorted({c.tp for c in todo if c.processes > 1}):
        for case, outcome in measure_group([c for c in todo if c.processes > 1 and c.tp == tp], tp):
            record(case, outcome)
    kernel_table.write(opts.out, rows, notes(skipped), meta)
    return opts.out / kernel_table.CSV_NAME, len(rows) - len(kept), notes(skipped)


def notes(skipped: list[tuple[Case, str]]) -> list[str]:
    """One line per (op, impl, reason): the cases it covers, counted."""
    grouped: dict[tuple, list[Case]] = defaultdict(list)
    for case, why in skipped:
        grouped[(case.group, case.impl, why)].append(case)
    return [f"{group} {impl}: {len(cs)} case(s) ({', '.join(sorted({f'{c.model} tp{c.tp}' for c in cs}))}): {why}"
            for (group, impl, why), cs in grouped.items()]
