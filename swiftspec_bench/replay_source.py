"""Replay profiles from a real-weight results table (`--acceptance replay:FILE`).

For each (system, dataset) the profile pools, over the rows whose acceptance was measured, the
per-round emitted lengths, the bonus-in-tree flags and the draft's mean child log-probs of the rows
of the same system and of the tree and chain settings it uses (run_settings.SETTING_USERS;
swiftspec: the same draft steps d where recorded, else the nearest d), grafted where the run grafts
(rows older than the `graft` column did not); from grafting rows, also how often a draft step's
lookup fired and how many chain nodes each firing kept (rows older than those columns, and split
rows, record none).
"""
from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pandas as pd

from swiftspec_core.errors import UserError
from swiftspec_core.replay import ReplayProfile

from .names import base_name
from .results import LIST_COLUMNS, read_file_frame, read_frame
from .run_settings import unused_setting
from .systems import GRAFTING, row_graft

REPLAYED = {"chain", "tree", "swiftspec"}  # ar emits one token a round: nothing to replay


def parse_acceptance(text: str) -> Path | None:
    """'real' -> None; 'replay:FILE' -> FILE (a run folder, or a results file: .parquet or .csv)."""
    if text == "real":
        return None
    if not text.startswith("replay:") or not text[len("replay:"):]:
        raise UserError(f"--acceptance {text}: choose real or replay:FILE")
    path = Path(text[len("replay:"):]).expanduser()
    if not path.exists():
        raise UserError(f"--acceptance {text}: no such file or folder")
    return path


class ReplaySource:
    def __init__(self, path: Path, *, tree_bs: int, tree_w: int, chain_k: int, graft: str = "off"):
        frame = _read(path)
        measured = frame[frame["acceptance"] == "real"].copy()  # not themselves replayed
        measured["base"] = [base_name(s) for s in measured["system"]]  # tree@tp2 replays as tree
        measured["graft"] = measured["graft"].fillna("off") if "graft" in measured else "off"
        # A row of no verification round (its answer ended in the prefill) has no length to draw
        real = measured[[len(lengths) > 0 for lengths in measured["accepted_lengths"]]]
        self.graft, self.measured, self.real, self.path = graft, measured, real, path
        self.settings = dict(tree_bs=tree_bs, tree_w=tree_w, chain_k=chain_k)

    def check(self, systems: list[str], datasets: list[str]) -> None:
        """Every replayed (system, dataset) has recorded rounds: a user error before anything runs."""
        for system in systems:
            for dataset in datasets:
                if system in REPLAYED and self._rows(system, dataset).empty:
                    raise UserError(f"{self.path} has no measured {system} rows for {dataset} with the settings "
                                    f"{system} uses: nothing to replay ({self._recorded(system)})")

    def _used(self, system: str) -> dict:
        """The tree and chain settings a system's acceptance depends on (run_settings.SETTING_USERS):
        chain's rounds are the same at any --tree-bs, tree's at any --chain-k, so only these must match."""
        return {name: value for name, value in self.settings.items() if not unused_setting(name, value, system)}

    def _recorded(self, system: str) -> str:
        """The settings the source's `system` rows were recorded with (what a run must ask to replay them)."""
        rows = self.real[self.real["base"] == system]
        if rows.empty and (self.measured["base"] == system).any():
            return f"its measured {system} rows hold no verification round: each answer ended in its prefill"
        if rows.empty:
            return f"it holds no measured {system} rows"
        columns = [*self._used(system), *(["graft"] if system in GRAFTING else [])]
        settings = sorted({" ".join(f"--{name.replace('_', '-')} {v}" for name, v in zip(columns, values))
                           for values in zip(*(rows[name] for name in columns))})
        return f"its {system} rows were recorded with {'; '.join(settings)}"

    def _rows(self, system: str, dataset: str) -> pd.DataFrame:
        frame = self.real
        keep = ((frame["base"] == system) & (frame["dataset"] == dataset)
                & (frame["graft"] == row_graft(system, self.graft)))
        for name, value in self._used(system).items():
            keep &= frame[name] == value
        return frame[keep]

    def profile(self, system: str, dataset: str, draft_steps: int | None = None) -> ReplayProfile | None:
        if system not in REPLAYED:
            return None
        rows = self._rows(system, dataset)
        if system == "swiftspec" and draft_steps:
            nearest = min(set(rows["draft_steps"]), key=lambda d: (abs(d - draft_steps), d))
            rows = rows[rows["draft_steps"] == nearest]
        emitted = tuple(int(a) for lengths in rows["accepted_lengths"] for a in lengths)
        flags = tuple(bool(b) for lists in rows["bonus_in_tree"] for b in lists)
        logprobs = [list(v) for v in rows["draft_topk_logprobs"] if v is not None and len(v)]
        mean = tuple(sum(col) / len(col) for col in zip(*logprobs)) if logprobs else ()
        return ReplayProfile(emitted=emitted, bonus_in_tree=flags, topk_logprobs=mean, **_grafts(rows),
                             accept_rates=_accept_rates(rows))


def _accept_rates(rows: pd.DataFrame) -> tuple[float, ...]:
    """ReplayProfile's accept_rates from the rows that recorded each sent tree's best path: at
    position k, the rounds that accepted node k over the rounds whose best path had it."""
    if "sent_paths" not in rows:
        return ()
    had, took = Counter(), Counter()  # position k -> rounds whose path had node k, rounds that took it
    for paths, lengths in zip(rows["sent_paths"], rows["accepted_lengths"]):
        if not hasattr(paths, "__len__") or not len(paths) or len(paths) != len(lengths):
            continue  # rows without them (older ones: None, or NaN where a union mixed folders)
        for path, emitted in zip(paths, lengths):  # nodes 1 .. path - 1 available, 1 .. emitted - 1 taken
            for k in range(1, int(path)):
                had[k] += 1
                took[k] += k < emitted
    return tuple(took[k] / had[k] for k in range(1, len(had) + 1))


def _grafts(rows: pd.DataFrame) -> dict:
    """ReplayProfile's graft_fire and graft_kept, pooled over the rows that recorded grafts."""
    if "graft_steps" not in rows or "graft_kept" not in rows:
        return {}
    steps, kept = 0, []
    for n, lengths in zip(rows["graft_steps"], rows["graft_kept"]):
        if n is not None and not pd.isna(n) and n > 0:
            steps += int(n)
            kept += [int(k) for k in (lengths if lengths is not None else ())]
    return dict(graft_fire=len(kept) / steps, graft_kept=tuple(kept)) if steps else {}


def replay_seed(seed: int, dataset: str, question_id: str, turn: int) -> int:
    """A per-query seed, the same for every system, so reruns repeat their draws."""
    digest = hashlib.sha256(f"{seed}/{dataset}/{question_id}/{turn}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


# What a source's rows must hold to be replayed (a results table of ours always does; another
# tool's table, or a file cut short, may not)
SOURCE_COLUMNS = ("system", "dataset", "acceptance", "tree_bs", "tree_w", "chain_k", "accepted_lengths",
                  "bonus_in_tree", "draft_steps", "draft_topk_logprobs")


def _read(path: Path) -> pd.DataFrame:
    """The source's rows: a run folder's results file, or a results file named as such (a
    .parquet or .csv of any name), checked as compare checks a folder's."""
    if path.is_dir():
        frame = read_frame(path, needs=SOURCE_COLUMNS)
    elif path.suffix in (".parquet", ".csv"):
        frame = read_file_frame(path, needs=SOURCE_COLUMNS)
    else:
        raise UserError(f"--acceptance replay:{path}: expected a run folder or a results file (.parquet or .csv)")
    for col in LIST_COLUMNS:  # empty where absent (a CSV's empty field)
        if col in frame:
            frame[col] = [[] if v is None else v for v in frame[col]]
    return frame
