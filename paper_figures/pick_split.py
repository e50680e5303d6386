"""The split the suite picks from a calibration folder (placement.best_split): prints TARGET+DRAFT.

    PYTHONPATH=. python3 paper_figures/pick_split.py RUN_DIR
"""
import sys

from swiftspec_bench.placement import best_split
from swiftspec_bench.results import read_frame

target, draft = best_split(read_frame(sys.argv[1]))
print(f"{target}+{draft}")
