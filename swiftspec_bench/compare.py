"""Tables from a run's rows: speed per (target, draft, dataset) and overall, speedup over a baseline,
mean accepted length. The losslessness check is lossless.py's. Reads results only: imports neither
torch nor transformers."""
from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from swiftspec_core.errors import UserError

from .placement import shared_gpu_systems
from .results import KEY, read_frame
from .run_settings import RUN_SETTINGS, unused_setting

FORMATS = ("table", "csv", "markdown")
OVERALL = "overall"
QUERY = ["target", "dataset", "question_id", "turn"]
PAIR = ["target", "draft"]  # rows of different drafts are summarized apart, even for one target


def read_runs(run_dirs: list[Path]) -> pd.DataFrame:
    """The rows of one or more run folders as one frame (an ar baseline run once, beside each
    folder of a tree sweep), checked to stand together: a system's query measured in one folder
    only, a question asked in one text (prompt_sha), and each (target, draft)'s rows made with
    one value of each setting their systems use (check_one_setting)."""
    run_dirs = list({Path(d).resolve(): Path(d) for d in run_dirs}.values())  # a folder named twice is read once
    frames = [read_frame(d) for d in run_dirs]
    where = " + ".join(str(d) for d in run_dirs)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1:
        frame["folder"] = [str(d) for d, f in zip(run_dirs, frames) for _ in range(len(f))]
        twice = frame[frame.duplicated(list(KEY), keep=False)]
        if len(twice):
            r = twice.iloc[0]
            folders = " and ".join(twice[(twice[list(KEY)] == r[list(KEY)]).all(axis=1)].folder)
            raise UserError(f"{r.system} on {r.dataset} question {r.question_id} turn {r.turn} ({r.target} / "
                            f"{r.draft}) is in both {folders}: name each folder's rows once (a system's "
                            "query is measured in one run)")
        if "prompt_sha" in frame:
            asked = frame.dropna(subset=["prompt_sha"]).groupby(["dataset", "question_id"]).prompt_sha.nunique()
            if (asked > 1).any():
                dataset, question = asked[asked > 1].index[0]
                raise UserError(f"{where}: {dataset} question {question} was asked in different texts in these "
                                "folders (prompt_sha): their rows are not the same query")
        frame = frame.drop(columns="folder")
    check_one_setting(frame, where)
    return frame


def check_one_setting(frame: pd.DataFrame, where) -> None:
    """A user error where one (target, draft)'s rows were made with different values of a run
    setting (run_settings.RUN_SETTINGS) that their systems use (SETTING_USERS there): a run refuses
    to resume into a folder of other settings, so such rows were put together by hand or come
    from several folders, and they cannot be held against each other (ar's 8 tokens against
    tree's 4 read as a divergence; 4-token speeds averaged with 8-token ones)."""
    for (target, draft), rows in frame.groupby(PAIR, sort=False):
        for name in (n for n in RUN_SETTINGS if n in rows):
            # (None: a column older rows lack, NaN in a frame; --graft off's graft_len)
            values = list(dict.fromkeys(v for v, s in zip(rows[name], rows["system"])
                                        if not _missing(v) and not unused_setting(name, v, s)))
            if len(values) > 1:
                raise UserError(f"{where}: the rows of {target} / {draft} were made with different {name} "
                                f"({', '.join(str(v) for v in values)}); compare and plot take rows of one "
                                "value of each setting their systems use (runs keep them apart: another --out each)")


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def pick_baseline(frame: pd.DataFrame, baseline: str | None) -> str:
    """--baseline if given (it must be in the rows), else ar, else hf-ar, else the first system."""
    systems = list(dict.fromkeys(frame["system"]))
    if baseline is not None:
        if baseline not in systems:
            raise UserError(f"--baseline {baseline}: no rows of that system (systems: {', '.join(systems)})")
        return baseline
    for name in ("ar", "hf-ar"):
        if name in systems:
            return name
    return systems[0]


def mean_accepted(rows: pd.DataFrame) -> float:
    """Tokens per target verification forward over the rows: every emitted token (bonus included,
    the prefill's first token not) over every round; NaN where the rows have no rounds."""
    rounds = rows["rounds"].sum()
    accepted = sum(int(np.sum(a)) for a in rows["accepted_lengths"] if a is not None)
    return accepted / rounds if rounds else float("nan")


def _stats(rows: pd.DataFrame) -> dict:
    tps = rows["tokens_per_s"].astype(float)
    per_token = rows["latency_s"].astype(float) / rows["new_tokens"].clip(lower=1)
    rounds = rows["rounds"].sum()
    prefill = rows["prefill_s"].astype(float) if "prefill_s" in rows else pd.Series(np.nan, index=rows.index)

    def per_round_ms(col: str) -> float:  # mean over every round of every query
        values = [v for lists in rows[col] if lists is not None for v in lists] if col in rows else []
        return float(np.mean(values)) * 1e3 if len(values) else float("nan")

    return {
        "queries": len(rows),
        "mean_tok_s": tps.mean(),
        "median_tok_s": tps.median(),
        "p5_tok_s": tps.quantile(0.05),  # the slow tail
        "p95_ms_per_token": per_token.quantile(0.95) * 1e3,
        "mean_accepted": mean_accepted(rows),
        # Where a round's time goes: the whole round (latency over rounds, less the prefill where
        # the rows time it), the target's verification, the draft on the critical path, and
        # (across processes) the target's wait on the link.
        "prefill_ms": prefill.mean() * 1e3,
        "round_ms": (rows["latency_s"] - prefill.fillna(0.0)).sum() / rounds * 1e3 if rounds else float("nan"),
        "target_ms": per_round_ms("target_s"),
        "draft_ms": per_round_ms("draft_s"),
        "link_ms": per_round_ms("link_wait_s"),
    }


def summarize(frame: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """One row per (target, draft, dataset, system), then per (target, draft, system) over every dataset.
    attrs: the baseline, and the systems that ran other queries than the baseline (partial)."""
    base = pick_baseline(frame, baseline)
    systems = list(dict.fromkeys(frame["system"]))
    out, partial = [], []
    for (target, draft), by_pair in frame.groupby(PAIR, sort=False):
        datasets = list(dict.fromkeys(by_pair["dataset"]))
        for dataset in datasets + [OVERALL]:
            rows = by_pair if dataset == OVERALL else by_pair[by_pair["dataset"] == dataset]
            by_system = {s: rows[rows["system"] == s] for s in systems if (rows["system"] == s).any()}
            for system, own in by_system.items():
                speedup, alike = _speedup(own, by_system.get(base))
                if not alike and system not in partial:
                    partial.append(system)
                out.append({"target": target, "draft": draft, "dataset": dataset, "system": system,
                            **_stats(own), "speedup": speedup})
    columns = ["target", "draft", "dataset", "system", "queries", "mean_tok_s", "median_tok_s", "p5_tok_s",
               "p95_ms_per_token", "speedup", "mean_accepted", "prefill_ms", "round_ms", "target_ms", "draft_ms",
               "link_ms"]
    summary = pd.DataFrame(out, columns=columns)
    summary.attrs["baseline"] = base
    summary.attrs["partial"] = partial
    return summary


def _speedup(rows: pd.DataFrame, base_rows: pd.DataFrame | None) -> tuple[float, bool]:
    """(rows' mean tokens/s over the baseline's, both on the queries both ran; whether the two ran
    the same queries, or there is no baseline to hold them against).
    A folder may hold a system on fewer queries than the baseline (a resumed run with another
    --limit or --datasets, a run stopped midway): means over different queries are not a speedup
    (the same rule as placement.best_split's)."""
    if base_rows is None:
        return float("nan"), True
    key = ["dataset", "question_id", "turn"]
    speeds = [r.set_index(key)["tokens_per_s"].astype(float) for r in (rows, base_rows)]
    shared = speeds[0].index.intersection(speeds[1].index)
    base_speed = speeds[1][shared].mean() if len(shared) else float("nan")
    alike = len(shared) == len(speeds[0]) == len(speeds[1])
    return (speeds[0][shared].mean() / base_speed if base_speed else float("nan")), alike


def speedup_lines(summary: pd.DataFrame) -> list[str]:
    """What the speedup column is, under every format's table (the table format's title says the
    baseline too; markdown and csv have no title), and which systems ran other queries than the
    baseline, so that their speedup is not the ratio of the mean_tok_s shown."""
    base = summary.attrs.get("baseline")
    lines = [f"speedup: mean tokens/s over {base}'s, on the queries both ran"]
    partial = summary.attrs.get("partial") or []
    if partial:
        lines.append(f"note: {', '.join(partial)} and {base} ran different queries: each speedup counts only the "
                     "queries both ran, mean_tok_s every query a system ran")
    return lines


def lockstep_note(frame: pd.DataFrame) -> str | None:
    """One line where the rows hold swiftspec run in lockstep on the CPU (no --split): there draft
    and target take turns in one process, so its speed says nothing of the parallel algorithm."""
    lockstep = [s for s in dict.fromkeys(frame["system"]) if s.split(":")[0] == "swiftspec"]
    on_cpu = "device" not in frame or (frame.loc[frame["system"].isin(lockstep), "device"] == "cpu").any()
    if lockstep and on_cpu:
        return (f"note: {', '.join(lockstep)} on cpu ran in lockstep (draft and target one after the other in one "
                "process): a correctness run, not a speed result")
    return None


def shared_gpu_note(frame: pd.DataFrame) -> str | None:
    """One line where rows of --tp or --split ran their processes on fewer GPUs (SWIFTSPEC_SHARED_GPU,
    runtime/gpus.py): their kernels took turns on a GPU, so their outputs count and their times do not."""
    shared = shared_gpu_systems(frame)
    if shared:
        return (f"note: {', '.join(shared)} ran its processes on fewer GPUs, taking turns on a shared GPU "
                "(SWIFTSPEC_SHARED_GPU): a correctness run, its times mean nothing")
    return None


SHOWN_COMMITS = 4  # rows_line names at most these of a folder's commits


def rows_line(frame: pd.DataFrame) -> str:
    """One line under the table saying what its rows are: device, weights, acceptance, commit
    (`rows: cuda, random weights, replayed acceptance, commit abc1234`); a folder of several
    commits says so, as its rows then come from different code."""
    def values(col: str) -> str:
        return "+".join(str(v) for v in dict.fromkeys(frame[col].fillna("?"))) if col in frame else "?"

    commits = [_short_commit(c) for c in dict.fromkeys(frame["commit"])] if "commit" in frame else ["?"]
    listed = ", ".join(commits[:SHOWN_COMMITS]) + (", ..." if len(commits) > SHOWN_COMMITS else "")
    made = f"commit {commits[0]}" if len(commits) == 1 else f"mixed: {len(commits)} commits ({listed})"
    return f"rows: {values('device')}, {values('weights')} weights, {values('acceptance')} acceptance, {made}"


def _short_commit(commit) -> str:
    """A git hash as its first 7 digits ("-dirty" kept); anything else (SWIFTSPEC_COMMIT as given,
    unknown) as it is."""
    if not isinstance(commit, str) or not commit:
        return "unknown"
    found = re.fullmatch(r"([0-9a-f]{40})(-dirty)?", commit)
    return found[1][:7] + (found[2] or "") if found else commit


def footer(frame: pd.DataFrame, summary: pd.DataFrame, fmt: str) -> list[str]:
    """The lines `compare` prints under its table: what the rows are, what the speedup is, then
    the notes (markdown: after an empty line, which ends the table there)."""
    return ([""] if fmt == "markdown" else []) + [rows_line(frame)] + speedup_lines(summary) + notes(frame)


def notes(frame: pd.DataFrame) -> list[str]:
    """The lines `compare` and `plot` print under their output: rows whose times are not speed results."""
    return [note for note in (lockstep_note(frame), shared_gpu_note(frame)) if note]


def _formatted(frame: pd.DataFrame) -> pd.DataFrame:
    shown = frame.copy()
    for col in shown.columns:
        if pd.api.types.is_float_dtype(shown[col]):
            shown[col] = [("-" if pd.isna(v) else f"{v:.2f}") for v in shown[col]]
    return shown.astype(str)


def render(frame: pd.DataFrame, fmt: str) -> str:
    if fmt == "csv":
        return frame.to_csv(index=False).rstrip("\n")
    shown = _formatted(frame)
    if fmt == "markdown":
        lines = ["| " + " | ".join(shown.columns) + " |", "|" + "|".join("---" for _ in shown.columns) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in shown.itertuples(index=False)]
        return "\n".join(lines)
    from rich.console import Console
    from rich.table import Table

    baseline = frame.attrs.get("baseline")
    table = Table(title=f"speedup over {baseline}" if baseline else None)
    for col in shown.columns:
        text = col in ("target", "draft", "dataset", "system", "question_id", "differs_from", "class")
        table.add_column(col, justify="left" if text else "right")
    for r in shown.itertuples(index=False):
        table.add_row(*r)
    # As wide as the table's longest cells: a fixed width cut system names (swiftspec:d3:graft and
    # swiftspec:d4:graft both read "swiftspec:d…"), and the rows could not be told apart.
    width = Console(width=10**6).measure(table).maximum
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True).print(table)
    return buffer.getvalue().rstrip("\n")
