"""Accepted lengths of a run, per dataset and system, and the checks of the CPU Qwen-pair run:

    python3 paper_figures/acceptance_report.py paper_figures/results/cpu-qwen-pair

- chain emits as many tokens per target forward as hf-assisted with a constant 7-token chain,
  query by query (the same algorithm);
- mean accepted length: tree >= chain, and swiftspec against tree;
- swiftspec's accepted length against the depth its draft can add per round (d).
Prints markdown.
"""
from __future__ import annotations

import sys

import pandas as pd

from swiftspec_bench.compare import mean_accepted, render
from swiftspec_bench.results import read_frame


def per_dataset(frame: pd.DataFrame) -> pd.DataFrame:
    """Tokens per verification forward: all emitted tokens over all rounds, per dataset."""
    table = frame.groupby(["dataset", "system"]).apply(mean_accepted, include_groups=False).unstack()
    table.loc["overall"] = [mean_accepted(frame[frame.system == s]) for s in table.columns]
    return table


def main(run_dir: str) -> None:
    frame = read_frame(run_dir)
    table = per_dataset(frame)
    print("## Tokens per target verification forward (mean accepted length, bonus included)\n")
    print(render(table.reset_index(), "markdown"))
    if {"chain", "hf-assisted"} <= set(frame.system):
        key = ["dataset", "question_id", "turn"]
        pair = frame[frame.system == "chain"].merge(frame[frame.system == "hf-assisted"], on=key,
                                                     suffixes=("_chain", "_hf"))
        same = (pair["accepted_lengths_chain"].map(list) == pair["accepted_lengths_hf"].map(list))
        print(f"\nchain vs hf-assisted: per-round accepted lengths equal on {int(same.sum())} of {len(pair)} "
              f"queries; tokens per forward equal on "
              f"{int((pair.mean_accepted_chain - pair.mean_accepted_hf).abs().lt(1e-9).sum())} of {len(pair)}")
    overall = table.loc["overall"]
    if {"tree", "chain"} <= set(overall.index):
        print(f"\ntree {overall['tree']:.2f} vs chain {overall['chain']:.2f}: tree >= chain is "
              f"{overall['tree'] >= overall['chain']}")
    for name in [s for s in overall.index if s.startswith("swiftspec")]:
        if "tree" in overall.index:
            print(f"{name} {overall[name]:.2f} vs tree {overall['tree']:.2f}: {overall[name] / overall['tree'] - 1:+.1%}")
    swift = frame[frame.system.str.startswith("swiftspec")]
    if len(swift):
        by_d = swift.groupby("draft_steps").apply(
            lambda r: pd.Series({"queries": len(r), "mean_accepted": mean_accepted(r),
                                 "bonus_in_tree": sum(sum(b) for b in r.bonus_in_tree)
                                 / max(1, sum(len(b) for b in r.bonus_in_tree))}), include_groups=False)
        print("\n## swiftspec by d (draft expansions per round)\n")
        print(render(by_d.reset_index(), "markdown"))


if __name__ == "__main__":
    main(sys.argv[1])
