"""`swiftspec-bench run` in three steps, each read top to bottom:

    validate(options)      everything checkable before a model loads: names, numbers, paths, the
                           run folder, the prompts themselves
    plan(checked, table)   the rows this run makes (labels, settings columns) and which are not done
    execute(planned, ...)  load the models, check the prompts fit, warm each system up, decode
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import typer

from swiftspec_core.errors import UserError

from . import datasets as ds
from . import kernel_choice, placement
from .model_spec import (check_model_spec, check_peers_have_a_model, check_replay_weights, check_tree_width,
                         model_sha, row_spelling)
from .prompt_fits import check_turn, context_positions
from .results import ResultsTable, package_commit, prompt_sha, results_file, row_from_result, row_key
from .run_settings import check_seed

DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class RunOptions:
    """The options of `swiftspec-bench run` as given: one field per parameter of cli.run, same name
    (cli.run passes its locals()), so a new option is added in both places."""
    target: str
    draft: str
    systems: str
    datasets: str
    limit: int
    max_new_tokens: int
    device: str
    dtype: str | None
    seed: int
    data_dir: str | None
    out: str
    tree_bs: int
    tree_w: int
    draft_steps: int | None
    chain_k: int
    weights: str
    acceptance: str
    tp: int
    split: str | None
    worker_timeout: float
    graft: str
    graft_len: int
    graft_ngram: str
    draft_noise: float
    kernels: str
    quant: str
    interleave: bool


@dataclass
class Checked:
    """A run's options, checked and resolved; nothing loaded yet."""
    options: RunOptions
    systems: list[str]
    split: tuple[int, int] | None
    queries: list  # datasets.Query, dataset by dataset
    device: str
    dtype: str
    out: Path
    needs_draft: bool
    replay: object | None  # replay_source.ReplaySource
    replay_digest: str  # sha256 of the replayed results file; "" for real acceptance
    graft_sizes: tuple[int, ...]  # --graft-ngram, longest first
    kernels: tuple[str, ...]  # --kernels resolved: torch, fused or persistent, one set or several
    persistent_target: bool  # under persistent the target runs it where on one GPU (kernel_choice.persistent_target)


@dataclass
class Planned:
    checked: Checked
    labels: dict[tuple[str, str], str]  # (system, kernel set) -> its name in the rows (placement, fixed d, kernels)
    columns: dict  # what every row of this run says besides its measures
    todo: list[tuple]  # ((system, kernel set), query, turn) not in the run folder yet, system by system


# --- validate -------------------------------------------------------------------------------------

def validate(o: RunOptions) -> Checked:
    """Every check that needs no model, in the order of the options; raises UserError."""
    from swiftspec_core.models import awq, noise
    from swiftspec_core.runtime.launch import parse_split

    from .replay_source import ReplaySource, parse_acceptance
    from .run_folder import check_out_dir
    from .systems import SYSTEMS, check_placement, parse_system_list

    systems = parse_system_list(o.systems)
    _check_positive(o.tp, "--tp")
    split = parse_split(o.split) if o.split is not None else None  # --split "": a user error, not no split
    check_placement(systems, o.tp, split, o.split, o.draft_steps)
    replay_path = parse_acceptance(o.acceptance)
    datasets = ds.parse_dataset_list(o.datasets)
    for value, flag in ((o.limit, "--limit"), (o.max_new_tokens, "--max-new-tokens"), (o.tree_bs, "--tree-bs"),
                        (o.tree_w, "--tree-w"), (o.chain_k, "--chain-k")):
        _check_positive(value, flag)
    if o.draft_steps is not None:
        _check_positive(o.draft_steps, "--draft-steps")
    check_seed(o.seed)
    graft_sizes = _check_graft(o.graft, o.graft_len, o.graft_ngram)
    if not o.worker_timeout > 0:
        raise UserError(f"--worker-timeout must be above 0 seconds (got {o.worker_timeout:g})")
    if o.weights not in ("real", "random"):
        raise UserError(f"--weights {o.weights}: choose real or random")
    check_replay_weights(replay_path, o.acceptance, o.target, o.weights)
    if o.quant not in awq.QUANT_METHODS:
        raise UserError(f"--quant {o.quant}: choose {' or '.join(awq.QUANT_METHODS)}")
    check_peers_have_a_model(systems, o.target, o.weights, o.quant)
    device = resolve_device(o.device)
    dtype = o.dtype or ("bfloat16" if device == "cuda" else "float32")
    if dtype not in DTYPES:
        raise UserError(f"--dtype {dtype}: choose {', '.join(DTYPES)}")
    needs_draft = any(SYSTEMS[s].needs_draft for s in systems)
    noise.check_draft_noise(o.draft_noise, o.weights, o.target, o.draft if needs_draft else o.target)
    check_model_spec(o.target, "--target", o.weights, o.quant)  # the draft's projections stay plain
    if needs_draft:
        check_model_spec(o.draft, "--draft", o.weights)
        check_tree_width(o.tree_w, systems, o.draft, kernel_choice.known_args(o.draft))
    kernels = kernel_choice.choose_sets(o, device, dtype, o.target, o.draft if needs_draft else None,
                                        placement.draft_gpus(systems, o.tp, split))
    out = check_out_dir(o.out)
    data_dir = ds.resolve_data_dir(o.data_dir)
    placement.check_processes(device, o.tp, split)
    placement.check_awq_shards(o.target, o.quant, systems, o.tp, split)
    replay, digest = None, ""
    if replay_path is not None:
        peers = [s for s in systems if not SYSTEMS[s].on_engine and s != "hf-ar"]
        if peers:
            raise UserError(f"--acceptance replay: {', '.join(peers)} cannot replay acceptance")
        replay = ReplaySource(replay_path, tree_bs=o.tree_bs, tree_w=o.tree_w, chain_k=o.chain_k, graft=o.graft)
        replay.check(systems, [d.name for d in datasets])
        digest = _file_digest(results_file(replay_path) if replay_path.is_dir() else replay_path)
    queries = [q for d in datasets for q in ds.load_queries(d, data_dir, o.limit)]
    persistent_target = kernel_choice.persistent_target(o, kernel_choice.known_args(o.target), systems)
    return Checked(o, systems, split, queries, device, dtype, out, needs_draft, replay, digest, graft_sizes, kernels,
                   persistent_target)


def _check_positive(value: int, flag: str) -> None:
    if value < 1:
        raise UserError(f"{flag} must be at least 1 (got {value})")


GRAFTS = ("off", "ngram")  # --graft's choices


def _check_graft(graft: str, graft_len: int, graft_ngram: str) -> tuple[int, ...]:
    """--graft and its parameters; returns the n-gram sizes, longest first."""
    if graft not in GRAFTS:
        raise UserError(f"--graft {graft}: choose {' or '.join(GRAFTS)}")
    _check_positive(graft_len, "--graft-len")
    try:
        sizes = tuple(sorted({int(n) for n in graft_ngram.split(",")}, reverse=True))
    except ValueError:
        raise UserError(f"--graft-ngram {graft_ngram}: expected a comma list of sizes, e.g. 3,2") from None
    if min(sizes) < 1:
        raise UserError(f"--graft-ngram {graft_ngram}: sizes must be at least 1")
    return sizes


def resolve_device(device: str) -> str:
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise UserError(f"--device {device}: choose auto, cpu or cuda")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available")
    return device


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- plan -----------------------------------------------------------------------------------------

def plan(c: Checked, table: ResultsTable) -> Planned:
    """The rows this run makes, checked against the settings of the rows already in the folder."""
    from .systems import graft_settings, label

    o = c.options
    # A model folder named otherwise than its rows name it (./m/ and /abs/m) keeps their name.
    target, draft = (row_spelling(spec, [row[role] for row in table.rows])
                     for role, spec in (("target", o.target), ("draft", o.draft)))
    columns = dict(target=target, draft=draft, target_sha=model_sha(o.target, o.weights),
                   draft_sha=model_sha(o.draft, o.weights) if c.needs_draft else "",
                   device=c.device, weights=_expected_weights(o.target, o.weights),
                   acceptance="replayed" if c.replay else "real", replay_source=c.replay_digest,
                   tree_bs=o.tree_bs, tree_w=o.tree_w, chain_k=o.chain_k, dtype=c.dtype, seed=o.seed,
                   max_new_tokens=o.max_new_tokens, draft_noise=o.draft_noise, quant=o.quant,
                   **graft_settings(o.graft, o.graft_len, c.graft_sizes))
    table.check_settings(columns, c.systems)
    table.check_prompts({(q.dataset, q.question_id): prompt_sha(q.turns) for q in c.queries})
    table.check_models(columns)
    # Each system under each kernel set, once a row name (ar runs fused under persistent where the
    # persistent kernel does not take its target).
    by_name = {}
    for s in c.systems:
        for k in c.kernels:
            name = label(s, o.tp, c.split, o.draft_steps, o.graft, k, persistent_target=c.persistent_target)
            by_name.setdefault(name, (s, k))
    labels = {unit: name for name, unit in by_name.items()}
    # System by system (a multi-process system's workers start once), query by query; or, with
    # --interleave, every system on a query before the next (each system's workers stay up).
    turns = [(q, t) for q in c.queries for t in range(1, len(q.turns) + 1)]
    order = ([(u, q, t) for q, t in turns for u in labels] if o.interleave else
             [(u, q, t) for u in labels for q, t in turns])
    todo = [(u, q, t) for u, q, t in order if not table.is_done(_key(labels[u], target, draft, q, t))]
    return Planned(c, labels, columns, todo)


def _expected_weights(target: str, weights: str) -> str:
    """What the rows will say: tiny presets exist only with random weights."""
    from swiftspec_core.models.loading import is_random

    return "random" if is_random(target, weights) else weights


def _key(system: str, target: str, draft: str, query, turn: int) -> tuple:
    return row_key(dict(system=system, target=target, draft=draft, dataset=query.dataset,
                        question_id=query.question_id, turn=turn))


# --- execute --------------------------------------------------------------------------------------

def execute(p: Planned, table: ResultsTable) -> None:
    """Load the models, check every prompt fits, then decode the rows to do, appending each."""
    import torch

    from swiftspec_core.decoders.base import SpecSettings
    from swiftspec_core.models import noise
    from swiftspec_core.models.awq_checkpoint import check_quant
    from swiftspec_core.models.vocab import check_pair

    from .systems import SYSTEMS, LoadedPair, close_each

    c, o = p.checked, p.checked.options
    settings = SpecSettings(tree_bs=o.tree_bs, tree_w=o.tree_w, draft_steps=o.draft_steps, chain_k=o.chain_k,
                            graft=o.graft, graft_len=o.graft_len, graft_ngram=c.graft_sizes)
    torch.manual_seed(o.seed)
    how = dict(weights=o.weights, dtype=getattr(torch, c.dtype), device=parent_device(c), seed=o.seed)
    peers = any(not SYSTEMS[s].on_engine for s in c.systems)  # an AWQ checkpoint's twin is theirs alone
    fits = []  # the positions the caches are sized to, found as every prompt is checked

    def check_prompts(tokenizer, max_context: int) -> None:  # before the target's weights load (minutes for a 70B)
        fits.append(context_positions(tokenizer, max_context, c.queries, o.max_new_tokens, settings))

    target = _load("target", o.target, **how, quant=o.quant, hf_twin=peers, before_weights=check_prompts)
    check_quant(target.name, target.awq is not None, o.quant)  # the draft's projections stay plain
    longest = fits[0]
    draft = _load("draft", o.draft, **how) if c.needs_draft else None
    if draft is not None:
        check_quant(draft.name, draft.awq is not None, "none")
        check_pair(target, draft, c.systems)
        check_tree_width(o.tree_w, c.systems, o.draft, draft.config)  # a shape not known before loading
        noise.draft_from_target(target, draft, o.draft_noise, o.seed, o.quant)
    # A pair a kernel set, their engines on the same loaded weights.
    pairs = {k: LoadedPair(target, draft, dtype=how["dtype"], device=c.device, seed=o.seed, max_seq_len=longest,
                           tp=o.tp, split=c.split, worker_timeout=o.worker_timeout, draft_noise=o.draft_noise,
                           kernels=k, quant=o.quant, keep_pools=o.interleave, persistent_target=c.persistent_target)
             for k in c.kernels}
    first = pairs[c.kernels[0]]
    columns = p.columns | dict(commit=package_commit(), weights=first.target.weights,
                               started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                               **placement.floors(first, c.device))
    try:
        _decode_all(p, table, pairs, settings, columns)
    except BaseException:
        close_each(pairs.values(), quietly=True)
        raise
    close_each(pairs.values())


def parent_device(c: Checked) -> str:
    """Where this process loads the models: the run's device where a system runs here, else "meta"
    (shapes only: every engine lives in worker processes, --tp or --split, which load their own
    shards; a 33B model in bf16 held here too would not leave rank 0 room on its GPU)."""
    from .systems import SYSTEMS, spans_processes

    runs_here = any(not spans_processes(SYSTEMS[s], c.options.tp, c.split) for s in c.systems)
    return c.device if runs_here else "meta"


def _load(role: str, spec: str, **how):
    from huggingface_hub.utils import logging as hub_logging
    from transformers.utils import logging as hf_logging

    from swiftspec_core.models.loading import load_model

    # Keep stderr for errors, a bad input's one line: no progress bars, no hub retry warnings (offline).
    hf_logging.disable_progress_bar()
    hub_logging.set_verbosity_error()
    typer.echo(f"loading {role} {spec} ...")
    return load_model(spec, **how)  # the draft gets its own copy, even when it names the target


def _decode_all(p: Planned, table: ResultsTable, pairs: dict, settings, columns: dict) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from swiftspec_core.models.vocab import eos_ids

    from . import systems
    from .replay_source import replay_seed

    budget = p.checked.options.max_new_tokens
    replay = p.checked.replay
    loaded = next(iter(pairs.values())).target  # every pair's: the same loaded model
    # Random weights would stop at whatever EOS they happen to emit: they decode the whole budget.
    eos = set() if loaded.weights == "random" else eos_ids(loaded)
    tokenizer = loaded.tokenizer
    warmed = set()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[speed]}"), TimeElapsedColumn()) as progress:
        task = progress.add_task("decoding", total=len(p.todo), speed="")
        for unit, q, turn in p.todo:
            (system, kernels), name = unit, p.labels[unit]
            pair = pairs[kernels]
            if not p.checked.options.interleave:  # one pool of workers at a time holds the GPUs
                for other in pairs.values():
                    if other is not pair:
                        other.close()
            progress.update(task, description=f"{name:<14} {q.dataset}/{q.question_id} turn {turn}")
            answers = [_earlier_answer(table, name, columns, q, t) for t in range(1, turn)]
            prompt = ds.chat_prompt_ids(tokenizer, list(q.turns[:turn]), answers)
            caches = pair.max_seq_len if systems.SYSTEMS[system].on_engine else None  # (hf-*'s grow)
            check_turn(len(prompt), budget, settings, f"{q.dataset} question {q.question_id} turn {turn}",
                       max_context=pair.target.max_context, caches=caches)
            query = dict(max_new_tokens=budget, eos_ids=eos, settings=settings)

            def replayed() -> dict:
                """The query, with recordings made at the d the system runs now (a warm-up may lower it)."""
                if replay is None:
                    return query
                return query | dict(replay=replay.profile(system, q.dataset, pair.draft_steps(system, settings)),
                                    replay_seed=replay_seed(columns["seed"], q.dataset, q.question_id, turn))

            if unit not in warmed:
                warm_up(system, pair, prompt, replayed())
                warmed.add(unit)
            result, latency = systems.run_query(system, pair, prompt, **replayed())
            text = tokenizer.decode(result.tokens, skip_special_tokens=True)
            table.append(row_from_result(result, latency, output_text=text, system=name, dataset=q.dataset,
                                         question_id=q.question_id, turn=turn, category=q.category,
                                         prompt_tokens=len(prompt), prompt_sha=prompt_sha(q.turns),
                                         graft=systems.row_graft(system, settings.graft), **columns,
                                         **placement.where(pair, system)))
            progress.update(task, advance=1, speed=f"{len(result.tokens) / max(latency, 1e-9):7.1f} tok/s")


def warm_up(system: str, pair, prompt: list[int], query: dict) -> None:
    """Decode the system's first timed query once, whole, unrecorded. Its first calls pay for what
    timing must not see: workers starting (--tp, --split), CUDA graph capture and compilation at
    the widths and spans this query uses, the allocator and caches growing to its length, the hf-*
    peers' lazy set-up. (A short stand-in prompt left the first timed prefill a longer prompt's
    shapes to pay for.)"""
    from . import systems

    systems.run_query(system, pair, prompt, **query)


def _earlier_answer(table: ResultsTable, system: str, columns: dict, q, turn: int) -> str:
    row = table.find(_key(system, columns["target"], columns["draft"], q, turn))
    if row is None:
        raise RuntimeError(f"turn {turn} of {q.dataset}/{q.question_id} has no row yet")
    return row["output_text"]
