"""`swiftspec-bench`: run systems on dataset prompts and record one row per query; compare; plot."""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

from swiftspec_core.errors import UserError

from . import datasets as ds
from . import placement
from .replay_source import replay_seed
from .results import ResultsTable, check_out_dir, row_from_result, row_key

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
DEFAULT_TREE_BS = 8
DEFAULT_TREE_W = 8
DEFAULT_CHAIN_K = 7
DEFAULT_SEED = 0
DTYPES = ("float32", "bfloat16", "float16")
# Each system first decodes this short prompt once, unrecorded, so no row pays for warm-up.
WARMUP_PROMPT = "Say hello."
WARMUP_TOKENS = 4

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Single-request speculative decoding benchmarks: run, compare, plot.")


@contextlib.contextmanager
def user_errors():
    """A UserError becomes one line on stderr and exit code 2."""
    try:
        yield
    except UserError as exc:
        message = " ".join(str(exc).split())
        typer.echo(f"error: {message}", err=True)
        raise typer.Exit(2) from None


def check_model_spec(spec: str, flag: str) -> None:
    """Catch what can be caught before loading: a preset name, an existing folder or .gguf file,
    or something shaped like a hub id (owner/name); anything else is an unknown preset or path."""
    from swiftspec_core.models.presets import PRESETS

    if spec in PRESETS:
        return
    path = Path(spec).expanduser()
    if path.exists():
        if path.is_dir() or path.suffix == ".gguf":
            return
        raise UserError(f"{flag} {spec}: not a model folder or a .gguf file")
    if path.suffix == ".gguf" or spec.startswith((".", "/", "~")) or path.is_absolute():
        raise UserError(f"{flag} {spec}: no such file or folder")
    if re.fullmatch(r"[\w.-]+/[\w.-]+", spec):
        return  # a hub id: whether it exists is known only when loading
    raise UserError(f"{flag} {spec}: unknown preset (known: {', '.join(PRESETS)}), and no such path")


def resolve_device(device: str) -> str:
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise UserError(f"--device {device}: choose auto, cpu or cuda")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available")
    return device


def package_commit() -> str:
    """HEAD of the package's checkout; SWIFTSPEC_COMMIT where the tree came without .git (GPU machine)."""
    if os.environ.get("SWIFTSPEC_COMMIT"):
        return os.environ["SWIFTSPEC_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(ds.PACKAGE_CHECKOUT), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def _check_positive(value: int, flag: str) -> None:
    if value < 1:
        raise UserError(f"{flag} must be at least 1 (got {value})")


@app.command()
def run(
    target: str = typer.Option(DEFAULT_TARGET, help="Preset name, hub id, local HF folder or .gguf file."),
    draft: str = typer.Option(DEFAULT_DRAFT, help="Draft model: preset name, hub id, local folder or .gguf."),
    systems: str = typer.Option(DEFAULT_SYSTEMS, help="Comma list of systems."),
    datasets: str = typer.Option(DEFAULT_DATASETS, help="Comma list of datasets, or all."),
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
    weights: str = typer.Option("real", help="real | random (the preset's shape, random values)."),
    acceptance: str = typer.Option("real", help="real | replay:FILE (a real-weight run's results: accepted "
                                                "lengths are drawn from it; for --weights random)."),
    tp: int = typer.Option(1, help="Tensor-parallel processes (GPUs) for ar, chain and tree."),
    split: Optional[str] = typer.Option(None, help="TARGET+DRAFT processes (GPUs) for swiftspec, e.g. 1+1; "
                                                   "without it swiftspec runs in lockstep in one process.",
                                        show_default=False),
    draft_noise: float = typer.Option(0.0, help="Losslessness runs: the draft is the target's random weights plus "
                                                "this relative Gaussian noise (--weights random, a draft of the "
                                                "target's shape)."),
) -> None:
    """Decode the first --limit prompts of each dataset with each system; one row per query."""
    with user_errors():
        import torch

        from swiftspec_core.runtime.launch import parse_split

        from .replay_source import ReplaySource, parse_acceptance
        from .systems import SYSTEMS, label, parse_system_list

        # Everything that can be checked without the models, before loading them.
        system_names = parse_system_list(systems)
        _check_positive(tp, "--tp")
        split_sizes = parse_split(split) if split else None
        replay_path = parse_acceptance(acceptance)
        dataset_names = ds.parse_dataset_list(datasets)
        _check_positive(limit, "--limit")
        _check_positive(max_new_tokens, "--max-new-tokens")
        for value, flag in ((tree_bs, "--tree-bs"), (tree_w, "--tree-w"), (chain_k, "--chain-k")):
            _check_positive(value, flag)
        if draft_steps is not None:
            _check_positive(draft_steps, "--draft-steps")
        if weights not in ("real", "random"):
            raise UserError(f"--weights {weights}: choose real or random")
        device = resolve_device(device)
        dtype = dtype or ("bfloat16" if device == "cuda" else "float32")
        if dtype not in DTYPES:
            raise UserError(f"--dtype {dtype}: choose {', '.join(DTYPES)}")
        needs_draft = any(SYSTEMS[s].needs_draft for s in system_names)
        check_model_spec(target, "--target")
        if needs_draft:
            check_model_spec(draft, "--draft")
        out_dir = Path(out)
        check_out_dir(out_dir)
        data_path = ds.resolve_data_dir(data_dir)
        placement.check_processes(device, tp, split_sizes)
        replay = None
        if replay_path is not None:
            peers = [s for s in system_names if not SYSTEMS[s].on_engine and s != "hf-ar"]
            if peers:
                raise UserError(f"--acceptance replay: {', '.join(peers)} cannot replay acceptance")
            replay = ReplaySource(replay_path, tree_bs=tree_bs, tree_w=tree_w, chain_k=chain_k)
            replay.check(system_names, dataset_names)
        queries = [q for name in dataset_names for q in ds.load_queries(name, data_path, limit)]
        table = ResultsTable(out_dir)  # reads what an earlier run into --out finished; writes nothing yet
        columns = dict(target=target, draft=draft, device=device,
                       weights=_expected_weights(target, weights), acceptance="replayed" if replay else "real",
                       tree_bs=tree_bs, tree_w=tree_w, chain_k=chain_k, dtype=dtype, seed=seed,
                       max_new_tokens=max_new_tokens, draft_noise=draft_noise)
        table.check_settings(columns)
        labels = {s: label(s, tp, split_sizes, draft_steps) for s in system_names}
        # System by system (a multi-process system's workers are started once), query by query.
        todo = [(s, q, t) for s in system_names for q in queries for t in range(1, len(q.turns) + 1)
                if not table.is_done(_key(labels[s], target, draft, q, t))]
        if not todo:
            typer.echo(f"nothing to do: {out_dir} holds every row of this run")
            return

        from swiftspec_core.decoders.base import SpecSettings

        torch.manual_seed(seed)
        pair = _load_pair(target, draft if needs_draft else None, weights=weights,
                          dtype=getattr(torch, dtype), device=device, seed=seed, draft_noise=draft_noise)
        settings = SpecSettings(tree_bs=tree_bs, tree_w=tree_w, draft_steps=draft_steps, chain_k=chain_k)
        longest = _check_context(pair.target, queries, max_new_tokens, settings)
        pair.max_seq_len, pair.seed, pair.tp, pair.split = longest, seed, tp, split_sizes
        columns |= dict(commit=package_commit(), weights=pair.target.weights,
                        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        **placement.floors(pair, device))
        try:
            _decode_all(todo, table, pair, settings, columns, max_new_tokens, labels, replay)
        finally:
            pair.close()
    typer.echo(f"wrote {len(table.rows)} rows to {out_dir}/results.parquet and results.csv")


def _expected_weights(target: str, weights: str) -> str:
    """What the rows will say: tiny presets exist only with random weights."""
    from swiftspec_core.models.presets import PRESETS

    return "random" if target in PRESETS and PRESETS[target].is_tiny else weights


def _key(system: str, target: str, draft: str, query, turn: int) -> tuple:
    return row_key(dict(system=system, target=target, draft=draft, dataset=query.dataset,
                        question_id=query.question_id, turn=turn))


def _load_pair(target: str, draft: str | None, *, draft_noise: float, **how):
    from transformers.utils import logging as hf_logging

    from swiftspec_core.models import noise
    from swiftspec_core.models.loading import check_pair, load_model

    from .systems import LoadedPair

    noise.check_draft_noise(draft_noise, how["weights"], target, draft or target)
    hf_logging.disable_progress_bar()  # keep stderr for errors: a bad input is one line there
    typer.echo(f"loading target {target} ...")
    loaded_target = load_model(target, **how)
    loaded_draft = None
    if draft is not None:
        typer.echo(f"loading draft {draft} ...")
        loaded_draft = load_model(draft, **how)  # its own copy, even when it names the target
        check_pair(loaded_target, loaded_draft)
        noise.draft_from_target(loaded_target, loaded_draft, draft_noise, how["seed"])
    return LoadedPair(loaded_target, loaded_draft, dtype=how["dtype"], device=how["device"], draft_noise=draft_noise)


def _context_needed(prompt_tokens: int, max_new_tokens: int, settings) -> int:
    """Positions a query may use: the prompt, the answer, and one verification tree or chain beyond."""
    return prompt_tokens + max_new_tokens + max(settings.tree_bs, settings.chain_k + 1)


def _check_context(target, queries, max_new_tokens: int, settings) -> None:
    """Every prompt must fit the target's context with its answer; a later turn is bounded by the
    earlier answers taking their whole budget (and is checked again, exactly, before it runs).
    Returns the most positions a query may use: the engines' caches are sized to it."""
    longest = 0
    for q in queries:
        turns = list(q.turns)
        n = len(ds.chat_prompt_ids(target.tokenizer, turns, [""] * (len(turns) - 1)))
        n += max_new_tokens * (len(turns) - 1)
        if _context_needed(n, max_new_tokens, settings) > target.max_context:
            raise UserError(f"{q.dataset} question {q.question_id}: prompt of {n} tokens + {max_new_tokens} new "
                            f"+ {max(settings.tree_bs, settings.chain_k + 1)} tree tokens exceeds the context of "
                            f"{target.max_context}")
        longest = max(longest, _context_needed(n, max_new_tokens, settings) + 1)
    return min(longest + 64, target.max_context)  # + the turn templates' few tokens


def _decode_all(todo, table: ResultsTable, pair, settings, columns: dict, max_new_tokens: int, labels: dict,
                replay) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from swiftspec_core.models.loading import eos_ids

    from .systems import run_query

    # Random weights would stop at whatever EOS they happen to emit: they decode the whole budget.
    eos = set() if pair.target.weights == "random" else eos_ids(pair.target)
    tokenizer = pair.target.tokenizer
    warm_prompt = ds.chat_prompt_ids(tokenizer, [WARMUP_PROMPT], [])
    warmed = set()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[speed]}"), TimeElapsedColumn()) as progress:
        task = progress.add_task("decoding", total=len(todo), speed="")
        for system, q, turn in todo:
            name = labels[system]
            progress.update(task, description=f"{name:<14} {q.dataset}/{q.question_id} turn {turn}")
            answers = [_earlier_answer(table, name, columns, q, t) for t in range(1, turn)]
            prompt = ds.chat_prompt_ids(tokenizer, list(q.turns[:turn]), answers)
            if _context_needed(len(prompt), max_new_tokens, settings) > pair.target.max_context:
                raise UserError(f"{q.dataset} question {q.question_id} turn {turn}: prompt of {len(prompt)} "
                                f"tokens + {max_new_tokens} new exceeds the context of {pair.target.max_context}")
            profile, seed = None, 0
            if replay is not None:
                profile = replay.profile(system, q.dataset, pair.draft_steps(system, settings))
                seed = replay_seed(columns["seed"], q.dataset, q.question_id, turn)
            if system not in warmed:  # first calls pay for allocations and lazy init: not measured
                run_query(system, pair, warm_prompt, max_new_tokens=WARMUP_TOKENS, eos_ids=eos, settings=settings,
                          replay=profile)
                warmed.add(system)
            result, latency = run_query(system, pair, prompt, max_new_tokens=max_new_tokens, eos_ids=eos,
                                        settings=settings, replay=profile, replay_seed=seed)
            text = tokenizer.decode(result.tokens, skip_special_tokens=True)
            table.append(row_from_result(result, latency, output_text=text, system=name, dataset=q.dataset,
                                         question_id=q.question_id, turn=turn, category=q.category,
                                         prompt_tokens=len(prompt), **columns, **placement.where(pair, system)))
            progress.update(task, advance=1, speed=f"{len(result.tokens) / max(latency, 1e-9):7.1f} tok/s")


def _earlier_answer(table: ResultsTable, system: str, columns: dict, q, turn: int) -> str:
    row = table.find(_key(system, columns["target"], columns["draft"], q, turn))
    if row is None:
        raise RuntimeError(f"turn {turn} of {q.dataset}/{q.question_id} has no row yet")
    return row["output_text"]


@app.command()
def compare(
    run_dir: Path = typer.Argument(..., help="A run folder (holds results.parquet)."),
    baseline: Optional[str] = typer.Option(None, help="System speedups are relative to (default: ar, else "
                                                      "hf-ar, else the first).", show_default=False),
    format: str = typer.Option("table", "--format", help="table | csv | markdown."),
) -> None:
    """Speed per (target, dataset) and overall; checks every system emitted the target's tokens
    (exit 1 on a divergence that is not a bf16 near-tie)."""
    from . import compare as cmp
    from . import lossless
    from .results import read_frame

    with user_errors():
        if format not in cmp.FORMATS:
            raise UserError(f"--format {format}: choose {', '.join(cmp.FORMATS)}")
        frame = read_frame(run_dir)
        summary = cmp.summarize(frame, baseline)
    typer.echo(cmp.render(summary, format))
    if lossless.report(frame, lambda table: cmp.render(table, format), typer.echo) is False:
        raise typer.Exit(1)


@app.command()
def plot(
    run_dir: Path = typer.Argument(..., help="A run folder (holds results.parquet)."),
    out: Optional[Path] = typer.Option(None, help="Figure folder (default: RUN_DIR/figures).", show_default=False),
) -> None:
    """Figures (PNG and PDF): speed per dataset, per-query speed with its tail, accepted length."""
    from . import plot as plots
    from .results import read_frame

    with user_errors():
        frame = read_frame(run_dir)
        fig_dir = out or Path(run_dir) / "figures"
        if fig_dir.exists() and not fig_dir.is_dir():
            raise UserError(f"--out {fig_dir} is an existing file, not a folder")
        written = plots.plot_run(frame, fig_dir)
    for path in written:
        typer.echo(str(path))


def main() -> None:
    app(prog_name="swiftspec-bench")


if __name__ == "__main__":
    main()
