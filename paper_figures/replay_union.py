"""One replay source out of several real-acceptance run folders (their rows, concatenated).

    python3 paper_figures/replay_union.py OUT_FOLDER FOLDER [FOLDER ...]

Writes OUT_FOLDER/results.parquet. For a replayed run whose systems were recorded in different
folders with the same tree settings (e.g. swiftspec with grafting in a new folder, serial tree in
an older one); rows of a system found in an earlier folder are not taken from a later one.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from swiftspec_bench.results import read_frame


def first_seen(folders) -> list[tuple[str, pd.DataFrame]]:
    """Each folder's rows of the systems no earlier folder holds: (folder, its rows) in order."""
    taken, seen = [], set()
    for folder in folders:
        frame = read_frame(folder)
        frame = frame[~frame["system"].isin(seen)]
        seen |= set(frame["system"])
        taken.append((folder, frame))
    return taken


def main() -> None:
    out = Path(sys.argv[1])
    taken = first_seen(sys.argv[2:])
    for folder, frame in taken:
        print(f"{folder}: {frame.groupby('system').size().to_dict()}")
    out.mkdir(parents=True, exist_ok=True)
    pd.concat([frame for _, frame in taken], ignore_index=True).to_parquet(out / "results.parquet")


if __name__ == "__main__":
    main()
