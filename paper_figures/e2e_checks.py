"""Issue 10's end-to-end checks from run folders, as a markdown table: each system's mean speed and
decode rate (tokens a ms after the prefill), its speed against ar and the serial baseline on the
queries both ran, how often swiftspec beats that baseline, and swiftspec's link waits (steady ones
against its verification, the first one against a steady one).

    PYTHONPATH=. python3 paper_figures/e2e_checks.py FOLDER [FOLDER ...] [--ar ar:fused]
                                                     [--baseline tree@tp2:graft:fused] [--baseline-folder F]

A system found in an earlier folder is not taken from a later one (replay_union.first_seen);
--baseline-folder takes the baseline's rows from F instead (e.g. swiftspec at one tree size
against tree@tp2 at its own best one: labels do not name the tree size).
"""
from __future__ import annotations

import argparse
import statistics

import pandas as pd

from replay_union import first_seen
from swiftspec_bench.compare import QUERY
from swiftspec_bench.results import read_frame


def ratio(rows: pd.DataFrame, other: pd.DataFrame) -> tuple[float, float, int]:
    """(mean speed / other's mean speed, share of queries faster, queries) on the queries both ran."""
    both = rows.merge(other, on=QUERY, suffixes=("", "_other"))
    if both.empty:
        return float("nan"), float("nan"), 0
    faster = (both.tokens_per_s > both.tokens_per_s_other).mean()
    return both.tokens_per_s.mean() / both.tokens_per_s_other.mean(), faster, len(both)


def decode_rate(rows: pd.DataFrame) -> float:
    """Mean over queries of tokens emitted after the first (the verifications') per ms of decoding
    (latency less prefill): the prefill, host-bound and drifting from run to run, left out."""
    return (rows.accepted_lengths.map(sum) / ((rows.latency_s - rows.prefill_s) * 1e3)).mean()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--ar", default="ar:fused")
    ap.add_argument("--baseline", default="tree@tp2:graft:fused")
    ap.add_argument("--baseline-folder", default=None)
    a = ap.parse_args()
    d = pd.concat([rows.assign(folder=folder) for folder, rows in first_seen(a.folders)], ignore_index=True)
    if a.baseline_folder:
        base = read_frame(a.baseline_folder)
        base = base[base.system == a.baseline].assign(folder=a.baseline_folder)
        d = pd.concat([d[d.system != a.baseline], base], ignore_index=True)
    ar, base = d[d.system == a.ar], d[d.system == a.baseline]
    print(f"| system | folder | queries | tok/s | decode tokens a ms | vs {a.ar} | vs {a.baseline} | faster than it |")
    print("|---|---|---|---|---|---|---|---|")
    for system, g in d.groupby("system", sort=False):
        vs_ar, _, _ = ratio(g, ar)
        vs_base, faster, n = ratio(g, base)
        print(f"| {system} | {g.folder.iloc[0]} | {len(g)} | {g.tokens_per_s.mean():.1f} | {decode_rate(g):.3f} | {vs_ar:.2f}x | "
              f"{vs_base:.2f}x | {faster:.0%} of {n} |")
    for system, g in d[d.system.str.startswith("swiftspec@")].groupby("system"):
        verify = statistics.median(t for ts in g.target_s for t in ts)
        steady = statistics.median(w for ws in g.link_wait_s for w in ws[1:])
        first = statistics.median(ws[0] for ws in g.link_wait_s)
        print(f"\n{system}: d {sorted(set(g.draft_steps))}; median verification {verify * 1e3:.2f} ms, "
              f"steady link wait {steady * 1e3:.2f} ms ({steady / verify:.1%} of it), first wait "
              f"{first * 1e3:.2f} ms ({first / steady:.1f}x a steady one)")


if __name__ == "__main__":
    main()
