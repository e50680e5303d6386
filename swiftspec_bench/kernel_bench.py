"""`swiftspec-bench kernels`: time every case of the matrix (kernel_shapes.py) on the GPU.

Timing: a case's calls (kernel_ops.py) are warmed up, captured in one torch CUDA graph, and the
graph is replayed REPLAYS times, each replay timed with CUDA events; a row is the median per call.
A whole forward is one graph already (graphs.make_forward, as the decoders run it): its replays
are timed one by one, each launched onto an idle GPU, so a row counts the graph's launch latency
as a decoder's step does (~6-10 us on an H200; NOTES, twenty-ninth session, call 6). An op's calls run back to back, ours under PDL (a call's blocks start while
the last call drains), so a kernel can time differently here than between the other kernels of a
forward: the forward rows judge a change to a kernel (NOTES v66-v68: the 8B gate_up GEMM).

Cases that need a process group (the all-reduces, a forward at tp >= 2) run in tp spawned
processes (runtime/launch.run_workers: gloo file-store rendezvous, CuPy NCCL, multicast off),
when the machine has the GPUs; everything else runs here on one GPU at its shard's shapes.
"""
from __future__ import annotations

import contextlib
import gc
import statistics
import traceback
from collections import defaultdict
from pathlib import Path

import torch

from swiftspec_core.errors import UserError
from swiftspec_core.graphs import capture, make_forward

from . import kernel_table
from .kernel_ops import CALLS, LOCAL_OPS, Skipped, group_call, ours
from .kernel_shapes import BF16, NEEDS_GROUP, Case, Options, draft_visible, message_bytes, shard_args

REPLAYS = 10
WARMUPS = 2  # eager rounds of the calls before the capture (graphs.capture)
SEED = 0


def failed(exc: Exception) -> str:
    """A case whose implementation raised: the traceback to stderr, one line for the notes (the
    other cases still run; a fault that leaves the GPU unusable fails every later case too)."""
    traceback.print_exc()
    return f"failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


@contextlib.contextmanager
def cheap_collections():
    """graphs.capture collects garbage before every capture; with transformers loaded a full
    collection takes ~0.6 s, times hundreds of cases. Freezing what exists now (modules, configs:
    never garbage) leaves collections only the objects made since."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


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
    def calls_in_a_row() -> None:
        for i in range(calls):
            call(i)  # its output is dropped: the graph's pool reuses the memory

    graph, _ = capture(calls_in_a_row, warmups=WARMUPS)
    if before_timing is not None:
        before_timing()
    try:
        return median_us(graph, calls)
    finally:
        del graph


def measure_local(case: Case) -> float:
    """Median us per call of a case that runs on this process's one GPU."""
    call, calls = LOCAL_OPS[case.group](case)
    return time_calls(call, calls)


# ---- a whole forward ----

def build_shard(model: str, tp: int, max_seq_len: int, group=None, quant: str = "none"):
    """One rank's engine of `model` at TP tp with random bf16 weights, made at its shard's shape
    directly (a 70B model's full state would not fit one GPU to be sharded). quant="awq" (one GPU):
    the layer projections round-to-nearest quantized, drawn a layer at a time (models/random_parts.py)."""
    from swiftspec_core.models.weights import build_engine, random_state

    if quant == "awq":
        return _awq_engine(model, tp, max_seq_len)
    local = shard_args(model, tp)
    _skip_unless_fits(f"{model} at tp {tp}", local.weight_bytes(BF16))
    engine = build_engine(local, random_state(local, torch.bfloat16, "cuda", seed=SEED), dtype=torch.bfloat16,
                          device="cuda", max_seq_len=max_seq_len)
    if group is not None and group.size > 1:  # what build_engine sets when it shards a full state
        engine.group = group
        engine.vocab_start = group.rank * local.vocab_size
        engine.full_vocab = shard_args(model, 1).vocab_size
    return engine


def _awq_engine(model: str, tp: int, max_seq_len: int):
    """One GPU's random-weight AWQ engine of `model` (as `run --weights random --quant awq` builds it)."""
    from swiftspec_core.models.awq import quantized_args
    from swiftspec_core.models.random_parts import RandomRecipe
    from swiftspec_core.models.presets import PRESETS

    if tp != 1:
        raise Skipped("AWQ engines are built here for one GPU only")
    _skip_unless_fits(f"{model} in AWQ", quantized_args(shard_args(model, 1)).weight_bytes(BF16))
    recipe = RandomRecipe(PRESETS[model].hf_config(), SEED, torch.bfloat16, torch.device("cuda"), "awq")
    return recipe.engine(dtype=torch.bfloat16, device="cuda", max_seq_len=max_seq_len)


def _skip_unless_fits(what: str, need: int) -> None:
    """Skipped unless `need` bytes of weights fit 90% of this GPU's memory."""
    have = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
    if need > 0.9 * have:
        raise Skipped(f"{what}: {need / 1e9:.0f} GB of weights per GPU do not fit {have / 1e9:.0f} GB")


def use_kernels(engine, impl: str) -> None:
    """The engine's kernel set for `impl`: ours = fused, torch = today's torch path, persistent =
    the persistent forward (a model it does not take is a skipped case, with the reason)."""
    if impl == "persistent":
        from swiftspec_core.kernels.persistent_forward import unsupported

        why = unsupported(engine)
        if why is not None:
            raise Skipped(f"the persistent forward: {why}")
    if hasattr(engine, "use_kernels"):
        engine.use_kernels({"ours": "fused", "persistent": "persistent"}.get(impl, "torch"))
    elif impl != "torch":
        raise Skipped("Transformer.use_kernels (our kernel sets) is not available")


def forward_graph(engine, width: int, context: int, max_visible: int | None = None):
    """The captured graph of the width-`width` forward (a chain of `width` tree tokens after
    `context` cached ones: every token sees its ancestors), inputs staged in a block of
    `max_visible` visible rows a token (default: the width). -> (graph, what keeps it alive: the
    forward and its cache)."""
    cache = engine.new_cache(context + width)
    cache.length = context
    forward = make_forward(engine, cache, width, max_visible or width)
    rows = list(range(context, context + width))
    forward([0] * width, rows, rows, context, [rows[:j + 1] for j in range(width)])  # stages the inputs
    graph, _ = forward.graphs[forward.span_for(context + width)]
    return graph, (forward, cache)


def time_forward(engine, width: int, context: int, before_timing=None, max_visible: int | None = None) -> float:
    """Median us of one graph replay of forward_graph's forward."""
    graph, keep = forward_graph(engine, width, context, max_visible)
    if before_timing is not None:
        before_timing()
    us = median_us(graph, 1)
    del graph, keep
    return us


def measure_forwards(cases: list[Case], group=None, before_timing=None,
                     draft_visible: int | None = None) -> list[tuple[Case, float | str]]:
    """The forward and draft-step cases, one engine per (model, tp), built once; a draft step's
    block holds draft_visible rows a token (kernel_shapes.draft_visible)."""
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
                    results += [(c, time_forward(engine, c.m, c.context, before_timing,
                                                 draft_visible if c.group == "draft_step" else None))
                                for c in todo if c.impl == impl]
                except Skipped as why:
                    results += [(c, str(why)) for c in todo if c.impl == impl]
                except Exception as exc:  # noqa: BLE001 -- one broken kernel set must not end the table
                    if group is not None:
                        raise  # the other ranks may wait in a collective: the run must end
                    results += [(c, failed(exc)) for c in todo if c.impl == impl]
        except Skipped as why:  # the engine could not be built
            results += [(c, str(why)) for c in todo]
        except Exception as exc:  # noqa: BLE001 -- as above
            if group is not None:
                raise
            results += [(c, failed(exc)) for c in todo]
        finally:
            del engine
            _release()
    return results


def _release() -> None:
    """Free an engine's memory (its graphs and modules hold reference cycles). Not after every
    case: a collection takes ~0.6 s with transformers loaded, and a case's inputs go with its
    closure anyway."""
    gc.collect()
    torch.cuda.empty_cache()


# ---- cases across tp processes ----

def _group_worker(rank: int, world: int, ctx) -> list[tuple[Case, float | str]]:
    """Every rank runs the same cases in the same order (their collectives pair up); rank 0's
    times are the rows."""
    cases, draft_visible = ctx.args  # list[Case], int
    line_up = ctx.world.barrier
    ll = None

    def low_latency():
        nonlocal ll
        if ll is None:
            exchange = ours("allreduce", "exchange_over")(ctx.world.pg, list(range(world)))
            LLAllReduce = ours("allreduce", "LLAllReduce")
            ll = LLAllReduce(rank, world, exchange, max_bytes=max(message_bytes(c) for c in cases
                                                                  if c.group in NEEDS_GROUP))
        return ll

    torch.manual_seed(SEED + rank)
    results = []
    gc.freeze()  # see cheap_collections; this process ends after the cases
    try:
        for case in [c for c in cases if c.group in NEEDS_GROUP]:
            try:
                call, calls = group_call(case, ctx.group, low_latency)
                results.append((case, time_calls(call, calls, before_timing=line_up)))
            except Skipped as why:
                results.append((case, str(why)))
        results += measure_forwards([c for c in cases if c.group in ("forward", "draft_step")], ctx.group,
                                    before_timing=line_up, draft_visible=draft_visible)
    finally:
        if ll is not None:
            ll.close()  # before the process group goes (the design notes: a hang at exit otherwise)
    return results


def measure_group(cases: list[Case], tp: int, draft_visible: int) -> list[tuple[Case, float | str]]:
    """Cases that need tp processes; each is Skipped when the machine has fewer GPUs."""
    if torch.cuda.device_count() < tp:
        return [(c, f"needs {tp} GPUs, {torch.cuda.device_count()} visible") for c in cases]
    from swiftspec_core.runtime.launch import run_workers

    _release()
    return run_workers(_group_worker, tp, (cases, draft_visible), device="cuda")


# ---- the command ----

def run(opts: Options, cases: list[Case]) -> tuple[Path, int, list[str]]:
    """Measure every case not already in opts.out (same device), writing both files after each.
    -> (the csv's path, rows written this run, the notes)."""
    from swiftspec_core.runtime.floor import copy_bandwidth

    from .runner import package_commit

    kept = kernel_table.read_rows(opts.out)  # a damaged table is bad input: said before any GPU work
    if not torch.cuda.is_available():
        raise UserError("no CUDA GPU here: swiftspec-bench kernels times GPU kernels")
    device = torch.cuda.get_device_name()
    others = {r["device"] for r in kept} - {device}
    if others:
        raise UserError(f"--out {opts.out} holds rows measured on {', '.join(sorted(others))}, "
                        f"not on this {device}: choose another --out")
    done = {kernel_table.row_key(r) for r in kept}
    todo = [c for c in cases if c.key not in done]
    bandwidth = copy_bandwidth()
    meta = dict(device=device, commit=package_commit(), bandwidth=bandwidth,
                timing=f"{CALLS}+ calls captured in one CUDA graph, median of {REPLAYS} replays (CUDA "
                       "events); a forward: one replay per call. An op's calls run back to back (ours "
                       "under PDL): inside a forward a kernel may time otherwise, and the forward rows "
                       "are what a kernel change must improve")
    rows, skipped = list(kept), []

    def record(case: Case, outcome: float | str) -> None:
        if isinstance(outcome, str):
            skipped.append((case, outcome))
            print(f"{case.op} {case.model} tp{case.tp} m{case.m} {case.impl}: not measured: {outcome}", flush=True)
        else:
            rows.append(kernel_table.make_row(case, outcome, bandwidth, device, meta["commit"]))
            print(f"{case.op} {case.model} tp{case.tp} m{case.m} ctx{case.context or '-'} {case.impl}: "
                  f"{outcome:.2f} us (floor {rows[-1]['floor_us']})", flush=True)
        kernel_table.write(opts.out, rows, notes(skipped), meta)

    torch.manual_seed(SEED)
    visible = draft_visible(opts)
    local = [c for c in todo if c.processes == 1 and c.group in LOCAL_OPS]
    with cheap_collections():
        for case in local:
            try:
                record(case, measure_local(case))
            except Skipped as why:
                record(case, str(why))
            except Exception as exc:  # noqa: BLE001 -- one broken kernel must not end the table
                record(case, failed(exc))
        for case, outcome in measure_forwards([c for c in todo if c.processes == 1 and c not in local],
                                              draft_visible=visible):
            record(case, outcome)
    for tp in sorted({c.tp for c in todo if c.processes > 1}):
        for case, outcome in measure_group([c for c in todo if c.processes > 1 and c.tp == tp], tp, visible):
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
