"""What the tests import besides the installed packages, put in reach once: the repository root
(`paper_figures.X`) and paper_figures/ itself, as `python3 paper_figures/X.py` finds a script's
siblings (`from timing import fail`). A test file that set this up itself passed in the whole suite
and failed alone whenever another file had done it first (session 52, call 2)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT / "paper_figures", ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
