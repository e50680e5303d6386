"""The losslessness check: every system must emit the target's own greedy tokens.

For each query, a row's tokens are compared with the reference's: ar's at the row's target
placement where that ran (chain@tp2 and tree@tp2 against ar@tp2, swiftspec@2+1 against ar@tp2),
else ar's, else the tokens most systems emitted; each only against rows whose target ran the same
kernels (the rows' target_kernels: torch, our fused kernels, or the persistent kernel's forward),
which round differently from each other. Each divergence is placed (the first differing position)
and classed by the reference's top-2 logit margin there:
- near-tie: both systems saw a near-tie there and chose within it: the reference's margin and
  (where the row records it) the row's own are below the rounding bound of the run's dtype, and
  the two top-2 pairs share a token (three candidates can sit within rounding of each other: on
  2xH200, llama-3-8b, ar@tp2's first token was 68681 over 3018 over ar's 80905, ar's 80905 over
  3018). Both may then be right to rounding (bf16 forwards of different widths, or TP ranks
  summing in another order, round differently). Where neither pair holds the other's tokens the
  divergence is real however small the margins (random weights' margins are mostly below the
  bound, so the margin alone could not fail a check);
- real: anything else, or where the rows cannot say (older rows without tokens or margins);
  a real divergence fails the check;
- agreement: transformers' peers (hf-*) in a 16-bit dtype run other kernels, so they are
  reported as agreement length (tokens equal before the first difference), never failed;
- follows: a later turn of a query whose earlier turn already diverged (its prompt differs);
- placement: ar at another TP degree against ar on one process, in a 16-bit dtype: the ranks'
  partial sums round differently (on 2xH200, llama-3-8b, ar@tp2 and ar parted at a token where
  the two top-2 pairs shared nothing, every margin under 0.13), so it is reported, not failed;
  that TP computes the same function is checked in fp32 and float64 by the tests;
- unchecked: no other system decoded the query on the same target kernels: the row is its own
  reference, so it passes nothing (a folder of tree alone is not lossless, only unchecked).
Replayed rows of a drafting system follow drawn acceptance, not the target: they are not compared
(ar's rows of a replayed run decode as ar does anywhere: they are a reference like any other).
"""
from __future__ import annotations

import pandas as pd

from .names import base_name
from .placement import TP_LABEL, label_split
from .run_settings import unused_setting

QUERY = ["target", "dataset", "question_id", "turn"]
KERNELS = "_target_kernels"  # check()'s column of each row's target_kernels(), read by _reference
# Other drafts (or draft noise) are other configurations: their rows are compared apart.
CONFIG = ["draft", "draft_noise"]

# Below this top-2 margin (in logits) a 16-bit run's choice is a near-tie. Derived on the CPU
# (paper_figures/near_tie_bound.py):
# llama-3.2-1b's shape with random weights (logit std 0.90), 64 positions, the same weights in
# bf16 and fp32: bf16 moves a token's top-2 margin by at most 0.11 (median 0.023). Two bf16
# forwards that differ only in reduction order (verification width, tree row order) each sit
# within that of the fp32 margin, so they disagree by at most about 0.22; with margin, 0.25.
# That is ~70 x 2^-8 x the logit scale: bf16's 2^-8 relative rounding of the hidden state,
# accumulated over the layers. Real weights have larger logits, so there the bound errs toward
# calling a divergence real. fp16 rounds finer than bf16 and shares the bound; fp32 gets none.
NEAR_TIE_MARGIN_BF16 = 0.25
NEAR_TIE_MARGIN = {"bfloat16": NEAR_TIE_MARGIN_BF16, "float16": NEAR_TIE_MARGIN_BF16, "float32": 0.0}
CLASSES = ["identical", "near-tie", "real", "agreement", "follows", "placement", "unchecked"]
COLUMNS = ["system", *QUERY, "draft", "differs_from", "position", "ref_margin", "bound", "class"]


def _is_peer(system: str) -> bool:
    return system.startswith("hf-")


def _values(row, column: str) -> list | None:
    value = row.get(column)
    return None if value is None or (not hasattr(value, "__len__") and pd.isna(value)) else list(value)


def first_difference(tokens: list | None, reference: list | None) -> int | None:
    """The first position where the two token lists differ (the shorter one's length if one is
    a prefix of the other); None when either is unknown or they are equal."""
    if tokens is None or reference is None:
        return None
    for i, (a, b) in enumerate(zip(tokens, reference)):
        if a != b:
            return i
    return min(len(tokens), len(reference)) if len(tokens) != len(reference) else None


def _at(values: list | None, position: int | None):
    return values[position] if values and position is not None and position < len(values) else None


def _within_tie(tokens, margins, seconds, ref_tokens, ref_seconds, position, bound) -> bool:
    """At `position` the row's own margin (where recorded) is below `bound` too, and the two top-2
    pairs share a token (a row that records no runner-ups, e.g. an older one, offers its token only)."""
    ours, theirs = _at(tokens, position), _at(ref_tokens, position)
    if ours is None or theirs is None:
        return False
    own_margin = _at(margins, position)
    if own_margin is not None and own_margin >= bound:
        return False
    return bool({ours, _at(seconds, position)} & {theirs, _at(ref_seconds, position)} - {None})


def target_tp(system: str) -> int:
    """The target's TP degree in a row's system label: chain@tp2 -> 2, swiftspec@2+1 -> 2, ar -> 1."""
    split, tp = label_split(system), TP_LABEL.search(system)
    return split[0] if split else int(tp[1]) if tp else 1


def target_kernels(row: pd.Series) -> str:
    """The kernels a row's target ran: its target_kernels column (torch-compile counted as torch),
    or, in rows made before that column, read off its label (systems.label): fused for :fused and
    :persistent (a persistent draft's target ran fused then), else torch."""
    known = row.get("target_kernels")
    if isinstance(known, str) and known:
        return "torch" if known == "torch-compile" else known
    return "fused" if row["system"].endswith((":fused", ":persistent")) else "torch"


def _reference(rows: pd.DataFrame, row: pd.Series) -> tuple[pd.Series, str]:
    """ar's row at the row's target placement where it ran the query, else ar's on one GPU, each
    with the row's target kernels (the KERNELS column check() adds), else a row with the output
    most systems emitted (ours before transformers' peers, whose 16-bit kernels differ)."""
    system, tp = row["system"], target_tp(row["system"])
    same_kernels = rows[rows[KERNELS] == row[KERNELS]]  # torch, fused and persistent round apart
    ar = same_kernels[same_kernels["system"].map(base_name) == "ar"]
    placements = ([tp] if tp > 1 and base_name(system) != "ar" else []) + [1]
    for place in placements:
        here = ar[ar["system"].map(target_tp) == place]
        if len(here):
            return here.iloc[0], here.iloc[0]["system"]
    ours = same_kernels[~same_kernels["system"].map(_is_peer)]
    voters = ours if len(ours) else rows
    sha = voters["output_sha"].value_counts().index[0]
    return voters[voters["output_sha"] == sha].iloc[0], "majority"


def check(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(every divergence: one row each, with its class; per (target, draft, system): queries and
    how many were identical to the reference or diverged in each class)."""
    frame = frame[~replayed_rows(frame)]
    frame = frame.assign(**{c: frame[c] if c in frame else None for c in CONFIG})
    frame = frame.assign(**{KERNELS: frame.apply(target_kernels, axis=1) if len(frame) else []})
    found, classes = [], {}
    diverged_turns: dict[tuple, int] = {}  # (system, config, query without turn) -> first diverged turn
    for key, rows in frame.sort_values("turn").groupby(CONFIG + QUERY, sort=False, dropna=False):
        config = tuple(str(v) for v in key[: len(CONFIG)])  # str: NaN keys would not compare equal
        query = dict(zip(QUERY, key[len(CONFIG):]))
        for _, row in rows.iterrows():
            system, dtype = row["system"], row.get("dtype")
            bucket = classes.setdefault((row["target"], row["draft"], system), {c: 0 for c in CLASSES})
            if not ((rows[KERNELS] == row[KERNELS]) & (rows["system"] != system)).any():
                bucket["unchecked"] += 1
                continue
            ref, ref_name = _reference(rows, row)
            ref_tokens, ref_margins = _values(ref, "output_tokens"), _values(ref, "margins")
            ref_seconds = _values(ref, "runner_ups")
            earlier = (system, config, *[query[c] for c in QUERY[:-1]])
            if row["output_sha"] == ref["output_sha"]:
                bucket["identical"] += 1
                continue
            tokens = _values(row, "output_tokens")
            position = first_difference(tokens, ref_tokens)
            margin = _at(ref_margins, position)
            bound = NEAR_TIE_MARGIN.get(dtype, 0.0)
            if earlier in diverged_turns and diverged_turns[earlier] < query["turn"]:
                kind = "follows"
            elif _is_peer(system) and dtype in ("bfloat16", "float16"):
                kind = "agreement"
            elif (base_name(ref_name) == "ar" and target_tp(ref_name) == 1 and system.startswith("ar@tp")
                  and dtype in ("bfloat16", "float16")):
                kind = "placement"
            elif margin is not None and margin < bound and _within_tie(tokens, _values(row, "margins"),
                                                                       _values(row, "runner_ups"), ref_tokens,
                                                                       ref_seconds, position, bound):
                kind = "near-tie"
            else:
                kind = "real"
            diverged_turns.setdefault(earlier, query["turn"])
            bucket[kind] += 1
            found.append({"system": system, **query, "draft": row["draft"], "differs_from": ref_name,
                          "position": position, "ref_margin": margin, "bound": bound, "class": kind})
    summary = pd.DataFrame([{"target": t, "draft": d, "system": s, "queries": sum(n.values()), **n}
                            for (t, d, s), n in classes.items()],
                           columns=["target", "draft", "system", "queries", *CLASSES])
    return pd.DataFrame(found, columns=COLUMNS), summary


def replayed_rows(frame: pd.DataFrame) -> pd.Series:
    """The rows whose tokens followed drawn acceptance lengths: a system that uses acceptance
    (run_settings.SETTING_USERS: the drafting ones) under --acceptance replay."""
    if "acceptance" not in frame or not len(frame):
        return pd.Series(False, index=frame.index)
    drafts = ~frame["system"].map(lambda system: unused_setting("acceptance", "replayed", system))
    return (frame["acceptance"] == "replayed") & drafts


def verdict(divergences: pd.DataFrame, summary: pd.DataFrame | None = None) -> tuple[bool, str]:
    """(whether the check passes, its one-line verdict); with check()'s summary, it says where
    rows had nothing to be compared with (all of them: not checked)."""
    unchecked = int(summary["unchecked"].sum()) if summary is not None else 0
    if unchecked and _nothing_compared(summary):
        return True, ("lossless: not checked (no query was decoded by two systems on the same target kernels: "
                      "nothing to compare; run ar beside them)")
    passed, line = _verdict(divergences)
    return passed, line + (f" ({unchecked} rows unchecked: no other system decoded their query)" if unchecked else "")


def _nothing_compared(summary: pd.DataFrame) -> bool:
    """Whether check()'s summary holds no row that had another system's to be compared with."""
    return int(summary["unchecked"].sum()) == int(summary["queries"].sum())


def _verdict(divergences: pd.DataFrame) -> tuple[bool, str]:
    counts = divergences["class"].value_counts()
    real, near = int(counts.get("real", 0)), int(counts.get("near-tie", 0))
    others = ", ".join(f"{int(counts[c])} {c}" for c in ("near-tie", "agreement", "follows", "placement") if counts.get(c, 0))
    if real:
        return False, f"lossless: NO ({real} real divergences from the reference" + (f"; {others})" if others else ")")
    if near or len(divergences):
        return True, f"lossless: yes to rounding ({others}; bound {NEAR_TIE_MARGIN_BF16} logits in 16-bit dtypes)"
    return True, "lossless: yes"


def shown(divergences: pd.DataFrame) -> pd.DataFrame:
    """The divergences as printed: margins with four decimals, unknowns as '-'."""
    out = divergences.copy()
    out["position"] = ["-" if pd.isna(p) else str(int(p)) for p in out["position"]]
    out["ref_margin"] = ["-" if m is None or pd.isna(m) else f"{m:.4f}" for m in out["ref_margin"]]
    out["bound"] = [f"{b:g}" for b in out["bound"]]
    return out


def report(frame: pd.DataFrame, render, echo) -> bool | None:
    """Print the check (tables through `render`, lines through `echo`): the verdict, then where
    anything diverged, the divergences and the per-system summary. Returns whether it passed
    (None: not checked)."""
    replayed = int(replayed_rows(frame).sum())
    divergences, summary = check(frame)
    if replayed and _nothing_compared(summary):
        echo("lossless: not checked (acceptance replayed: tokens follow the drawn lengths)")
        return None
    passed, line = verdict(divergences, summary)
    echo(line + (f"; {replayed} rows of replayed acceptance not compared (their tokens follow the drawn "
                 "lengths)" if replayed else ""))
    if len(divergences):
        echo(render(shown(divergences)))
        echo(render(summary))
    return passed
