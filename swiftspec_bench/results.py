"""The results table of a run: one row per (system, dataset, question, turn), written after every
query as DIR/results.parquet and DIR/results.csv, each replaced atomically, so a run that is
stopped at any moment leaves whole files and the next run into DIR resumes where it stopped."""
from __future__ import annotations

import csv
import hashlib
import json
import numbers
import os
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from swiftspec_core.errors import UserError

from .run_settings import RUN_SETTINGS, SETTINGS_BEFORE_COLUMN, unused_setting

PARQUET = "results.parquet"
CSV = "results.csv"

# Column -> arrow type, in file order.
ROW_SCHEMA = pa.schema([
    ("system", pa.string()),
    ("target", pa.string()),
    ("draft", pa.string()),
    ("draft_noise", pa.float64()),  # --draft-noise: the draft is the target plus this relative noise
    # A local model folder's or file's fingerprint (model_spec.model_sha; "" for presets and hub
    # ids): a folder whose model was replaced since is not resumed under the same name (absent in older rows)
    ("target_sha", pa.string()),
    ("draft_sha", pa.string()),
    ("dataset", pa.string()),
    ("question_id", pa.string()),
    ("turn", pa.int64()),  # 1-based
    ("category", pa.string()),
    ("prompt_tokens", pa.int64()),
    # sha256 of the question's turns as read (prompt_sha): a folder holding another text under the
    # same question id is not resumed (absent in older rows)
    ("prompt_sha", pa.string()),
    ("new_tokens", pa.int64()),
    ("max_new_tokens", pa.int64()),
    ("latency_s", pa.float64()),  # wall time of the decode call, prompt tokenization excluded
    ("prefill_s", pa.float64()),  # its target prompt forward (our engine's systems; absent in older rows)
    ("tokens_per_s", pa.float64()),
    ("rounds", pa.int64()),  # target verification forwards after the prefill
    ("mean_accepted", pa.float64()),  # tokens per verification forward, bonus included
    ("accepted_lengths", pa.list_(pa.int64())),
    ("target_s", pa.list_(pa.float64())),
    ("draft_s", pa.list_(pa.float64())),
    ("bonus_in_tree", pa.list_(pa.bool_())),
    ("draft_steps", pa.int64()),
    ("draft_topk_logprobs", pa.list_(pa.float64())),
    ("draft_parallel_s", pa.list_(pa.float64())),  # swiftspec across processes: draft work overlapping each round
    ("link_wait_s", pa.list_(pa.float64())),  # ... and the target's wait on the link for each tree
    ("output_sha", pa.string()),  # sha256 of the generated token ids (see output_sha())
    ("output_text", pa.string()),  # the decoded answer (MT-bench turn 2 is asked after it)
    ("output_tokens", pa.list_(pa.int64())),  # the generated token ids (absent in older rows)
    # Per generated token: the target's top-1 minus top-2 logit where it chose it (compare's
    # losslessness report; empty where the system cannot say, e.g. hf-assisted)
    ("margins", pa.list_(pa.float64())),
    ("runner_ups", pa.list_(pa.int64())),  # per token: the target's second choice there (ours; peers: empty)
    ("device", pa.string()),
    ("gpus", pa.int64()),
    ("weights", pa.string()),  # real | random
    ("acceptance", pa.string()),  # real | replayed
    ("replay_source", pa.string()),  # replayed rows: sha256 of the results file drawn from (else empty)
    ("kernels", pa.string()),  # torch (eager) | torch-compile (GPU: inductor) | fused (cuda/) | persistent (its draft)
    ("target_kernels", pa.string()),  # the target engine's, of the same names (absent in older rows)
    ("quant", pa.string()),  # none | awq: the target's layer projections in 4-bit AWQ (absent in older rows)
    ("bandwidth_tb_s", pa.float64()),  # measured device copy bandwidth at the run's start (GPU)
    ("target_floor_ms", pa.float64()),  # weight bytes / bandwidth: one target forward's HBM floor
    ("draft_floor_ms", pa.float64()),
    ("tree_bs", pa.int64()),
    ("tree_w", pa.int64()),
    ("chain_k", pa.int64()),
    ("graft", pa.string()),  # off | ngram: chains grafted into the draft tree (tree decoders; absent in older rows)
    ("graft_len", pa.int64()),  # a grafting run's --graft-len and --graft-ngram (longest first), as
    ("graft_ngram", pa.string()),  # tree_bs on every row; None under --graft off (absent in older rows)
    # Grafting rows (lockstep; absent in older rows, empty in split ones): draft steps that looked a
    # chain up, and per step whose lookup fired, the chain nodes kept (replay profiles draw these)
    ("graft_steps", pa.int64()),
    ("graft_kept", pa.list_(pa.int64())),
    # Lockstep tree decoders: per sent tree, its best (first-child) path in nodes, root included
    # (replay's acceptance rates a node; absent in older rows, empty in split ones)
    ("sent_paths", pa.list_(pa.int64())),
    ("dtype", pa.string()),
    ("seed", pa.int64()),
    ("commit", pa.string()),
    ("started_at", pa.string()),  # ISO-8601 UTC start of the run that made the row
])
COLUMNS = ROW_SCHEMA.names
LIST_COLUMNS = [f.name for f in ROW_SCHEMA if pa.types.is_list(f.type)]
KEY = ("system", "target", "draft", "dataset", "question_id", "turn")
# What compare and plot read from every row.
NUMBER_COLUMNS = ("turn", "new_tokens", "latency_s", "tokens_per_s", "rounds")
SUMMARY_COLUMNS = ("system", "target", "draft", "dataset", "question_id", "turn", "new_tokens", "latency_s",
                   "tokens_per_s", "rounds", "accepted_lengths", "output_sha")


def prompt_sha(turns) -> str:
    """sha256 of a question's turns (the user's messages) as JSON."""
    return hashlib.sha256(json.dumps(list(turns)).encode()).hexdigest()


def output_sha(tokens: list[int]) -> str:
    """sha256 of the token ids as comma-separated decimals (e.g. "1,2,3")."""
    return hashlib.sha256(",".join(str(t) for t in tokens).encode()).hexdigest()


def package_commit() -> str:
    """The rows' `commit`: HEAD of the package's checkout, "-dirty" where tracked files differ from
    it (the rows then come from code no commit holds); SWIFTSPEC_COMMIT, as given, where the tree
    came without .git (GPU machine)."""
    if os.environ.get("SWIFTSPEC_COMMIT"):
        return os.environ["SWIFTSPEC_COMMIT"]
    head = _git("rev-parse", "HEAD")
    if not head:
        return "unknown"
    changed = _git("status", "--porcelain", "--untracked-files=no")
    return f"{head}-dirty" if changed else head  # None (status failed): not known dirty, left bare


def _git(*args: str) -> str | None:
    """git's stripped stdout in the package's checkout; None where git fails or is missing."""
    from .datasets import PACKAGE_CHECKOUT

    try:
        out = subprocess.run(["git", "-C", str(PACKAGE_CHECKOUT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def row_from_result(result, latency_s: float, *, output_text: str, **columns) -> dict:
    """A row for one decoded query: the DecodeResult's measures plus the run's `columns`
    (system, target, draft, dataset, question_id, turn, prompt_tokens, settings, ...)."""
    n = len(result.tokens)
    return {
        **columns,
        "new_tokens": n,
        "latency_s": latency_s,
        "prefill_s": result.prefill_s,
        "tokens_per_s": n / latency_s if latency_s > 0 else 0.0,
        "rounds": result.rounds,
        "mean_accepted": result.mean_accepted,
        "accepted_lengths": [int(a) for a in result.accepted],
        "target_s": [float(t) for t in result.target_s],
        "draft_s": [float(t) for t in result.draft_s],
        "bonus_in_tree": [bool(b) for b in result.bonus_in_tree],
        "draft_steps": int(result.draft_steps),
        "draft_topk_logprobs": [float(x) for x in result.draft_topk_logprobs],
        "draft_parallel_s": [float(t) for t in result.draft_parallel_s],
        "link_wait_s": [float(t) for t in result.link_wait_s],
        "graft_steps": None if result.graft_steps is None else int(result.graft_steps),
        "graft_kept": [int(k) for k in result.graft_kept],
        "sent_paths": [int(p) for p in result.sent_paths],
        "output_sha": output_sha(result.tokens),
        "output_text": output_text,
        "output_tokens": [int(t) for t in result.tokens],
        "margins": [float(m) for m in result.margins],
        "runner_ups": [int(t) for t in result.runner_ups],
    }


def row_key(row: dict) -> tuple:
    return tuple(int(row[k]) if k == "turn" else str(row[k]) for k in KEY)


def results_file(run_dir: Path) -> Path | None:
    """The file DIR's rows are read from: results.parquet, else results.csv (a folder kept or copied
    without its parquet, as the committed result folders are), else None."""
    for name in (PARQUET, CSV):
        if (Path(run_dir) / name).exists():
            return Path(run_dir) / name
    return None


def read_rows(run_dir: Path) -> list[dict]:
    """Rows of DIR's results file (results_file) as plain dicts (list columns as Python lists,
    missing values None); [] if none. A run resuming DIR appends to these rows, so a folder holding
    only results.csv keeps them too."""
    path = results_file(run_dir)
    return [] if path is None else _file_rows(path)


def _file_rows(path: Path) -> list[dict]:
    """read_rows of one results file, a parquet or a CSV (by its suffix)."""
    if path.suffix == ".csv":
        rows = _csv_rows(path)
    else:
        try:  # the bytes of one open: a run replacing the file meanwhile cannot mix two versions
            # One thread: arrow's read pool, still winding down when a command exits right after
            # (plot's and compare's errors), aborted the process at exit ("terminate called without
            # an active exception", exit 134) in 12 of 40 runs (pyarrow 26; apache/arrow#34314)
            table = pq.read_table(pa.BufferReader(path.read_bytes()), use_threads=False)
        except Exception as exc:
            raise UserError(f"{path} is not a readable results file ({type(exc).__name__})") from None
        rows = table.to_pylist()
    missing = [c for c in KEY if rows and c not in rows[0]]
    if missing:
        raise UserError(f"{path} lacks the columns {', '.join(missing)}")
    for row in rows:  # settings added after rows were written: what those rows ran with
        for name, before in SETTINGS_BEFORE_COLUMN.items():
            if row.get(name) is None:
                row[name] = before
    return rows


def read_frame(run_dir: Path, needs=SUMMARY_COLUMNS) -> pd.DataFrame:
    """The results of DIR as a DataFrame; a user error if DIR holds none or they lack a column in `needs`."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: " + ("a file, not a run folder" if run_dir.exists() else "no such folder"))
    path = results_file(run_dir)
    if path is None:
        raise UserError(f"{run_dir} holds no {PARQUET} or {CSV} (run `swiftspec-bench run --out {run_dir}` first)")
    return read_file_frame(path, needs)


def read_file_frame(path: Path, needs=SUMMARY_COLUMNS) -> pd.DataFrame:
    """read_frame of one results file (a parquet, or a CSV by its suffix), with the same checks."""
    rows = _file_rows(path)
    if not rows:
        raise UserError(f"{path} has no rows")
    frame = pd.DataFrame(rows)
    missing = [c for c in needs if c not in frame.columns]
    if missing:
        raise UserError(f"{path} lacks the columns {', '.join(missing)}")
    # Another tool's table may name a column alike and hold text there (a CSV of ours is typed by
    # ROW_SCHEMA); a column of ours may be empty (None) where its rows do not measure it.
    text = [c for c in NUMBER_COLUMNS if c in needs and not pd.api.types.is_numeric_dtype(frame[c])
            and frame[c].map(lambda v: v is not None and not isinstance(v, numbers.Number)).any()]
    if text:
        raise UserError(f"{path}: the columns {', '.join(text)} hold no numbers; not a results table of swiftspec-bench")
    return frame


def read_csv(path: Path) -> pd.DataFrame:
    """A results.csv as written by ResultsTable, read by the standard library's csv module and typed
    by ROW_SCHEMA: text as text (an empty field reads back as "", as CSV cannot tell it from a
    missing one), list columns decoded from their JSON text, numbers parsed by Python, so exactly
    as written, an empty one as missing (a whole-number column with a gap as floats, as pandas
    reads it). Not pandas' parser: before pandas 3.1 it read floats up to ~10 ulps off
    (0.031434756999999536 as 0.0314347569999995 on the GPU machine) and 3.0 cut text at a NUL
    (NOTES v126). Columns the schema does not know stay text. A file that is not such a table (a
    row of another length, a number or list that does not parse) is a UserError."""
    types = {field.name: field.type for field in ROW_SCHEMA}
    try:
        with open(path, newline="", encoding="utf-8") as f:
            header, *records = csv.reader(f)
        if any(len(r) != len(header) for r in records):
            raise ValueError("rows of another length than the header's")
        return pd.DataFrame({name: _typed([r[i] for r in records], types.get(name)) for i, name in enumerate(header)},
                            columns=header)
    except (ValueError, csv.Error) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise UserError(f"{path} is not a results.csv as swiftspec-bench writes it ({exc})") from None


def _csv_rows(path: Path) -> list[dict]:
    """read_csv's rows as read_rows gives a parquet's: missing numbers None, whole-number columns
    as ints (read_csv reads one with a gap as floats)."""
    types = {field.name: field.type for field in ROW_SCHEMA}
    rows = read_csv(path).astype(object).to_dict("records")
    for row in rows:
        for name, value in row.items():
            if isinstance(value, float) and value != value:  # NaN: a missing number
                row[name] = None
            elif value is not None and name in types and pa.types.is_integer(types[name]):
                row[name] = int(value)
    return rows


def _typed(cells: list[str], kind: pa.DataType | None):
    """One column's CSV fields as its schema type (see read_csv)."""
    if kind is None or pa.types.is_string(kind):
        return cells
    if pa.types.is_list(kind):
        return [None if c == "" else json.loads(c) for c in cells]
    if pa.types.is_integer(kind) and "" not in cells:
        try:
            return pd.array([int(c) for c in cells], dtype="int64")
        except ValueError:  # written as floats ("12.0"): the column had gaps in the frame written
            pass
    return pd.array([float(c) if c != "" else float("nan") for c in cells], dtype="float64")


class ResultsTable:
    """The rows of one run folder; `append` adds a row and rewrites both files atomically."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.rows = read_rows(self.run_dir)
        self._done = {row_key(r) for r in self.rows}

    def is_done(self, key: tuple) -> bool:
        return key in self._done

    def find(self, key: tuple) -> dict | None:
        for row in self.rows:
            if row_key(row) == key:
                return row
        return None

    def check_settings(self, settings: dict, systems=None) -> None:
        """A user error if DIR's rows were made with other RUN_SETTINGS than this run's, in a
        setting both a row's system and one of this run's `systems` (names; None: any) use."""
        for row in self.rows:
            for name in RUN_SETTINGS:
                if name not in row or name not in settings:
                    continue
                if unused_setting(name, row[name], row["system"]) or unused_setting(name, settings[name]):
                    continue
                if systems is not None and all(unused_setting(name, settings[name], s) for s in systems):
                    continue
                if row[name] != settings[name]:
                    raise UserError(f"{self.run_dir} holds rows made with {name}={row[name]} (this run: "
                                    f"{settings[name]}); use another --out to keep them apart")

    def check_prompts(self, shas: dict[tuple[str, str], str]) -> None:
        """A user error if DIR holds rows of a (dataset, question id) made from another text than
        this run reads (prompt_sha): a prompts file edited since, or another file of the same name."""
        for row in self.rows:
            made, now = row.get("prompt_sha"), shas.get((row["dataset"], row["question_id"]))
            if made is not None and now is not None and made != now:
                raise UserError(f"{self.run_dir} holds rows of {row['dataset']} question {row['question_id']} "
                                "made from another prompt text; use another --out to keep them apart")

    def check_models(self, columns: dict) -> None:
        """A user error if DIR holds rows of this run's target or draft, named as this run names it,
        made from a model folder that has changed since (target_sha / draft_sha)."""
        for row in self.rows:
            for role in ("target", "draft"):
                made, now = row.get(f"{role}_sha"), columns[f"{role}_sha"]
                if row[role] == columns[role] and made and now and made != now:
                    raise UserError(f"{self.run_dir} holds rows of --{role} {row[role]} made from another model "
                                    "there (its config or weight files have changed); use another --out")

    def append(self, row: dict) -> None:
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise ValueError(f"row lacks {missing}")
        self.rows.append({c: row[c] for c in COLUMNS})
        self._done.add(row_key(row))
        self.write()

    def write(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        rows = [{c: r.get(c) for c in COLUMNS} for r in self.rows]
        table = pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
        _atomic_write(self.run_dir / PARQUET, lambda f: pq.write_table(table, f))
        frame = pd.DataFrame(rows, columns=COLUMNS)
        for col in LIST_COLUMNS:  # lists as JSON text in the CSV
            frame[col] = [None if v is None else json.dumps(list(v)) for v in frame[col]]
        # Every text field quoted: a bare carriage return in an answer stays inside its field.
        text = frame.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        _atomic_write(self.run_dir / CSV, lambda f: f.write(text.encode()))


def _atomic_write(path: Path, write) -> None:
    """Write into a temporary file beside `path`, fsync it, then rename it over `path`."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:  # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass
