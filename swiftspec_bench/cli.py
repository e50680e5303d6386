"""`swiftspec-bench`: run systems on dataset prompts and record one row per query; compare; plot."""
from __future__ import annotations

import atexit
import contextlib
import os
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

from swiftspec_core.errors import Fault, UserError
from swiftspec_core.runtime.heartbeat import DEFAULT_TIMEOUT_S as DEFAULT_WORKER_TIMEOUT

from .interrupts import Interrupts, Terminated, sigterm_interrupts

# compare and plot read results only: this module imports neither torch nor transformers at load
# (run's steps live in runner.py, imported when `run` is called).

# Defaults of `swiftspec-bench run`, in one place. They must finish in under 15 minutes on 2 CPU
# cores (the fp32 1.5B target decodes ~2.5 tokens/s there): 6 systems x 7 queries x 16 tokens, plus
# the prefills (sum's first article: ~20 s per system) and loading. At 24 tokens a run on an idle
# machine was on course for ~14.5 min (its first 23 rows took 6 min of decoding): too close.
DEFAULT_TARGET = "qwen2.5-coder-1.5b"
DEFAULT_DRAFT = "qwen2.5-coder-0.5b"
DEFAULT_SYSTEMS = "hf-ar,hf-assisted,ar,chain,tree,swiftspec"
DEFAULT_DATASETS = "all"
DEFAULT_LIMIT = 1  # prompts per dataset
DEFAULT_MAX_NEW_TOKENS = 16
DEFAULT_OUT = "runs/latest"
# The verification budget and grafting: picked from issue 9's measurements. With grafting, bs 12
# accepted 4.01 tokens a round against 3.49 at bs 8 on the real pair (CPU, 7 queries; bs 16: 4.13)
# and ran 1.08x faster on one H200 (8B/1B shapes, lockstep, 33 queries; bs 16: 1.05x); grafting
# itself ran swiftspec@1+1 1.18x faster on two H200s (70 queries) and lockstep swiftspec 1.13x
# (35 queries). paper_figures/NOTES.md has the runs.
DEFAULT_TREE_BS = 12
DEFAULT_TREE_W = 8
DEFAULT_CHAIN_K = 7
DEFAULT_SEED = 0
INTERRUPTED = 130  # typer's exit status for Ctrl-C it caught itself
RUN_LOG = "run.log"  # in the run folder: the tracebacks of a run that ended by a fault
DEFAULT_GRAFT = "ngram"
DEFAULT_GRAFT_LEN = 6
DEFAULT_GRAFT_NGRAM = "3,2"

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Single-request speculative decoding benchmarks: run, compare, plot.")


@contextlib.contextmanager
def user_errors(log: Path | None = None):
    """A UserError, a Fault (a worker died or stalled), running out of GPU memory in this process
    or Ctrl-C becomes one line on stderr and exit code 2. A fault's tracebacks (every rank's, then
    this process's) are appended to `log`."""
    try:
        yield
    except UserError as exc:
        _fail(str(exc))
    except Fault as exc:
        _fail_fault(exc, log)
    except Terminated:
        _fail("interrupted (SIGTERM)")
    except KeyboardInterrupt:
        _fail("interrupted")
    except Exception as exc:
        if Interrupts.seen:  # Ctrl-C inside an import can surface as any error (see Interrupts)
            _fail("interrupted")
        torch = sys.modules.get("torch")  # imported by then if it ran out of memory (this module does not import it)
        if torch is None or not isinstance(exc, torch.OutOfMemoryError):
            raise
        _fail_fault(Fault(f"out of GPU memory: {_memory_summary(exc)}; what this run holds on one GPU (its models, "
                          "caches and graphs; an hf-* peer's whole transformers model) does not fit there",
                          "".join(traceback.format_exception(exc))), log)


def _fail_fault(exc: Fault, log: Path | None):
    where = _append_log(log, exc) if log is not None else None
    _fail(f"{exc}; the run's log: {where}" if where else str(exc))


def _memory_summary(exc: Exception) -> str:
    """torch's out-of-memory message up to what the GPU had free (the rest is advice on the allocator)."""
    text = " ".join(str(exc).split())
    end = text.find(" is free.")
    return text[:end + len(" is free")] if end >= 0 else text[:200]


def _fail(message: str):
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(2) from None


def _append_log(log: Path, exc: Fault) -> str | None:
    """Append one entry (a header line, the details, the traceback) in one write; where it went, or
    None (then the traceback goes to stderr after all: it must not be lost)."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entry = (f"==== {stamp} pid {os.getpid()}: {' '.join(sys.argv)}\nerror: {exc}\n{exc.details}"
             f"{''.join(traceback.format_exception(exc))}\n")
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, entry.encode())  # O_APPEND: one write lands whole after any other run's
        finally:
            os.close(fd)
        return str(log)
    except OSError as err:
        typer.echo(f"{entry}(could not write {log}: {err})", err=True)
        return None


@app.command()
def run(
    ctx: typer.Context,
    target: str = typer.Option(DEFAULT_TARGET, help="Preset name, hub id, local HF folder or .gguf file."),
    draft: str = typer.Option(DEFAULT_DRAFT, help="Draft model: preset name, hub id, local folder or .gguf."),
    systems: str = typer.Option(DEFAULT_SYSTEMS, help="Comma list of systems."),
    datasets: str = typer.Option(DEFAULT_DATASETS, help="Comma list of dataset names or paths of .jsonl files "
                                                        "in the question format (datasets.yaml), or all."),
    limit: int = typer.Option(DEFAULT_LIMIT, help="Prompts per dataset."),
    max_new_tokens: int = typer.Option(DEFAULT_MAX_NEW_TOKENS, help="Token budget per answer."),
    device: str = typer.Option("auto", help="auto | cpu | cuda."),
    dtype: Optional[str] = typer.Option(None, help="float32 | bfloat16 | float16 (default: float32 on cpu, "
                                                   "bfloat16 on cuda).", show_default=False),
    seed: int = typer.Option(DEFAULT_SEED, help="Seed (random weights)."),
    data_dir: Optional[str] = typer.Option(None, help="Folder of the local jsonl files (default: "
                                                      "../shared/datasets/eagle if it exists, else the hub)."),
    out: str = typer.Option(DEFAULT_OUT, help="Run folder; an existing one is resumed."),
    tree_bs: int = typer.Option(DEFAULT_TREE_BS, help="Tree nodes the target verifies per round."),
    tree_w: int = typer.Option(DEFAULT_TREE_W, help="Leaves the draft expands per step."),
    draft_steps: Optional[int] = typer.Option(None, help="SwiftSpec's draft expansions per round "
                                                         "(default: measured).", show_default=False),
    chain_k: int = typer.Option(DEFAULT_CHAIN_K, help="Draft tokens per chain round (chain, hf-assisted)."),
    graft: str = typer.Option(DEFAULT_GRAFT, help="off | ngram: tree and swiftspec graft chains from the request's "
                                                  "own text (prompt and output so far) under the draft tree's best "
                                                  "leaf, kept where the draft itself would grow them. On by default: "
                                                  "swiftspec@1+1 ran 1.18x faster with it on two H200s (NOTES.md)."),
    graft_len: int = typer.Option(DEFAULT_GRAFT_LEN, help="Most tokens one graft adds (--graft ngram)."),
    graft_ngram: str = typer.Option(DEFAULT_GRAFT_NGRAM, help="Suffix lengths the graft looks up, the longest "
                                                              "that occurred wins (--graft ngram)."),
    weights: str = typer.Option("real", help="real | random (the preset's shape, random values)."),
    acceptance: str = typer.Option("real", help="real | replay:FILE (a real-weight run's results: accepted "
                                                "lengths are drawn from it; for --weights random)."),
    tp: int = typer.Option(1, help="Tensor-parallel processes (GPUs) for ar, chain and tree."),
    split: Optional[str] = typer.Option(None, help="TARGET+DRAFT processes (GPUs) for swiftspec, e.g. 1+1; "
                                                   "without it swiftspec runs in lockstep in one process.",
                                        show_default=False),
    worker_timeout: float = typer.Option(DEFAULT_WORKER_TIMEOUT, help="Seconds a --tp / --split worker process "
                                         "may stop answering (no heartbeat: stopped, frozen) before the run ends "
                                         "with an error; a slow step or model load is not a stall."),
    draft_noise: float = typer.Option(0.0, help="Losslessness runs: the draft is the target's random weights plus "
                                                "this relative Gaussian noise (--weights random, a draft of the "
                                                "target's shape; under --quant awq the AWQ target's dequantized "
                                                "weights)."),
    kernels: str = typer.Option("auto", help="torch | fused | persistent | auto: our engines' forwards as torch ops "
                                             "(compiled on GPU) or our row-invariant CUDA kernels (cuda/; bfloat16 on "
                                             "GPU, forwards of at most 16 tokens), with which every decoder emits "
                                             "exactly ar's tokens; persistent: fused, with the draft's forwards in one "
                                             "launch of cuda/persistent.cu (a Llama-3.2-1B- or Llama-3-8B-shaped "
                                             "draft on one GPU), and a Llama-3-8B-shaped target's on one GPU where "
                                             "the run verifies at most 8 tokens at a time; auto: persistent where "
                                             "the draft fits it (with no draft: the "
                                             "target; on one H200 the faster), else fused where it can run (on "
                                             "2xH200 the faster than torch), else torch. Rows are labelled :fused, "
                                             "or :persistent where a persistent forward ran. A comma list "
                                             "(fused,persistent) runs every system under each set, with --interleave "
                                             "query by query: "
                                             "kernel sets compared on the same queries in one run."),
    quant: str = typer.Option("none", help="none | awq: the target's layer projections in 4-bit AWQ (group 128; "
                                           "the tiny presets' narrow layers 64 or 32), round-to-nearest from its "
                                           "weights (a checkpoint that is already AWQ loads as it is). "
                                           "Embeddings, norms, lm_head and the draft stay in --dtype (a draft "
                                           "of the target's random weights takes their dequantized values); the hf-* "
                                           "peers run the unquantized weights."),
    interleave: bool = typer.Option(False, help="Run the systems query by query (every system decodes a query "
                                                "before the next query), keeping each system's workers alive: "
                                                "drift of the machine during a run falls on every system alike, "
                                                "so their ratios hold; needs the memory of all of them at once."),
) -> None:
    """Decode the first --limit prompts of each dataset with each system; one row per query."""
    options = dict(locals())  # the options as given, by name (runner.RunOptions has one field each)
    del options["ctx"]
    from . import runner
    from .results import ResultsTable
    from .run_folder import locked
    from .run_settings import unused_flag_notes

    with user_errors(log=Path(out) / RUN_LOG), sigterm_interrupts():
        checked = runner.validate(runner.RunOptions(**options))  # before any model loads
        Interrupts.raise_if_seen()
        # (by its name: typer 0.29 has its own copy of click's enum, 0.27 click's)
        typed = [name for name in options if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"]
        for note in unused_flag_notes(typed, checked.systems):
            typer.echo(note)
        with locked(checked.out):
            table = ResultsTable(checked.out)  # what an earlier run into --out finished
            planned = runner.plan(checked, table)
            if not planned.todo:
                typer.echo(f"nothing to do: {checked.out} holds every row of this run")
                return
            runner.execute(planned, table)  # its model loads import more: checked again after it
        Interrupts.raise_if_seen()
    typer.echo(f"wrote {len(table.rows)} rows to {checked.out}/results.parquet and results.csv")


@app.command()
def compare(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders (each holds results.parquet or results.csv): "
                                                    "their rows together, e.g. an ar baseline and a sweep's folder.",
                                          show_default=False),
    baseline: Optional[str] = typer.Option(None, help="System speedups are relative to (default: ar, else "
                                                      "hf-ar, else the first).", show_default=False),
    format: str = typer.Option("table", "--format", help="table | csv | markdown."),
) -> None:
    """Speed per (target, dataset) and overall; checks every system emitted the target's tokens
    (exit 1 on a divergence that is not a bf16 near-tie)."""
    from . import compare as cmp
    from . import lossless

    with user_errors():
        if format not in cmp.FORMATS:
            raise UserError(f"--format {format}: choose {', '.join(cmp.FORMATS)}")
        frame = cmp.read_runs(run_dirs)
        summary = cmp.summarize(frame, baseline)
    typer.echo(cmp.render(summary, format))
    # --format csv: stdout is the CSV alone (a program reads it), what the rows are and the check on stderr
    say = (lambda text: typer.echo(text, err=True)) if format == "csv" else typer.echo
    for line in cmp.footer(frame, summary, format):
        say(line)
    if lossless.report(frame, lambda table: cmp.render(table, format), say) is False:
        raise typer.Exit(1)


@app.command()
def plot(
    run_dirs: list[Path] = typer.Argument(..., help="Run folders (each holds results.parquet or results.csv).",
                                          show_default=False),
    out: Optional[str] = typer.Option(None, help="Figure folder (default: RUN_DIR/figures of one run folder).",
                                      show_default=False),
) -> None:
    """Figures (PNG and PDF): speed per dataset, per-query speed with its tail, accepted length."""
    from . import compare as cmp
    from . import plot as plots
    from .run_folder import named_folder

    with user_errors():
        if out is None and len(run_dirs) > 1:
            raise UserError("plot of several run folders: name the figures' folder with --out")
        frame = cmp.read_runs(run_dirs)
        fig_dir = named_folder(out) if out is not None else Path(run_dirs[0]) / "figures"
        if fig_dir.exists() and not fig_dir.is_dir():
            raise UserError(f"--out {fig_dir} is an existing file, not a folder")
        written = plots.plot_run(frame, fig_dir)
    for path in written:
        typer.echo(str(path))
    for note in cmp.notes(frame):
        typer.echo(note)


@app.command()
def kernels(
    models: str = typer.Option("llama-3.2-1b,llama-3.2-3b,llama-3-8b,llama-3-70b", help="Comma list of presets."),
    tp: str = typer.Option("1,2", help="Tensor-parallel sizes: each op at one rank's shard of that size."),
    m: str = typer.Option("1,8,16", help="Rows (tokens) per call, 1..16; the forward's widths."),
    context: str = typer.Option("500,1000", help="Cached tokens the attention reads (the forward: the largest)."),
    ops: str = typer.Option("all", help="Comma list of gemm, awq_gemm, allreduce, gemm_allreduce, "
                                        "awq_gemm_allreduce, attention, rmsnorm, swiglu, forward, draft_step, "
                                        "or all."),
    impl: str = typer.Option("ours,cublas+nccl,sdpa,torch", help="Comma list of implementations."),
    tree_w: int = typer.Option(DEFAULT_TREE_W, help="draft_step times the draft forward at width tree_w + 1 "
                                                      "(+ --graft-len)."),
    graft_len: int = typer.Option(0, help="draft_step as a grafted step: a chain of this many tokens rides along "
                                          "(the run default grafts up to 6)."),
    tree_bs: int = typer.Option(DEFAULT_TREE_BS, help="draft_step stages its tokens as the drafter does at this "
                                                      "--tree-bs and --tree-w (a token's block row as wide as "
                                                      "the draft tree's cache rows)."),
    out: str = typer.Option("runs/kernels", help="Folder of kernels.csv and kernels.md; rows already there "
                                                 "(same device) are kept, not measured again."),
) -> None:
    """Time our kernels against cuBLAS + NCCL, SDPA and torch per op and shape (GPU): kernels.csv
    and kernels.md (the paper's Table 8 layout), median us of CUDA-graph replays beside the floor."""
    from . import kernel_bench, kernel_shapes

    with user_errors(log=Path(out) / "kernels.log"), sigterm_interrupts():  # a worker's fault: every rank's traceback
        opts = kernel_shapes.validate(models, tp, m, context, ops, impl, tree_w, tree_bs, graft_len, out)
        path, written, notes = kernel_bench.run(opts, kernel_shapes.plan(opts))
    for note in notes:
        typer.echo(f"not measured: {note}")
    typer.echo(f"wrote {written} rows to {path} and {path.with_name('kernels.md')}")


def main() -> None:
    # On the CPU torch's OpenMP threads spin while they wait for each other. On a machine whose
    # cores other work shares (2 cores, tiny presets), queries came out 10-100x slower at random
    # (one prompt's prefill took 1 ms or 70 ms); waiting passively kept them much steadier. Set
    # before torch loads (run imports it); an OMP_WAIT_POLICY already given wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    Interrupts.install()
    code = run_app(sys.argv[1:])
    if Interrupts.seen:
        # A Ctrl-C that passed through a C extension's import can leave Python set to end itself by
        # SIGINT at exit (status -2, not 2), so the status is set by os._exit; the exit handlers
        # run first, as at a normal exit (multiprocessing's: else the resource tracker of a --split
        # run warns of leaked semaphores after the error line).
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def run_app(args: list[str]) -> int:
    """The app on `args`, its exit status returned; click's own usage errors (an unknown option, a
    value of the wrong type, a missing argument) end as every other bad input does: one error line
    and exit 2, not click's boxed usage text."""
    try:  # typer 0.2x parses with its own copy of click, whose exceptions are not click's
        from typer._click.exceptions import UsageError
    except ImportError:
        from click.exceptions import UsageError

    try:
        code = app(args, prog_name="swiftspec-bench", standalone_mode=False) or 0
    except UsageError as exc:
        if not exc.format_message().strip():  # no arguments at all: the help was the answer
            return 2
        where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
        typer.echo(f"error: {where}{' '.join(exc.format_message().split())} (--help lists the options)", err=True)
        return 2
    except typer.Abort:  # Ctrl-C outside a command's own handling (other typer versions)
        code = INTERRUPTED
    except Exception:
        if not Interrupts.seen:
            raise
        code = INTERRUPTED
    if code == INTERRUPTED:  # typer 0.2x: Ctrl-C outside a command's own handling (its imports) is a bare exit 130
        typer.echo("error: interrupted", err=True)
        return 2
    return code


if __name__ == "__main__":
    main()
