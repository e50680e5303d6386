"""The committed result folders keep their rows: a run log under paper_figures/results that says it
wrote rows into FOLDER/results.parquet sits beside FOLDER holding that parquet (results.csv is
gitignored there, so a folder packed without its parquet reaches git, and the GPU machine, empty:
NOTES v226). Folders dated before 2026-12-03 are left as they were committed (sessions 29-32 kept
compare.md only)."""
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "paper_figures" / "results"
FIRST_CHECKED = "2026-12-03"


def run_logs():
    for log in sorted(RESULTS.rglob("*.log")):
        dated = log.relative_to(RESULTS).parts[0]
        if dated[:10] < FIRST_CHECKED:
            continue
        wrote = rf"^wrote \d+ rows to \S*/{re.escape(log.stem)}/results\.parquet"
        if re.search(wrote, log.read_text(errors="replace"), re.M):
            yield log


def test_every_run_log_has_its_rows_beside_it():
    logs = list(run_logs())
    assert logs, "no run log found: the pattern no longer matches what `swiftspec-bench run` prints"
    missing = [str(log.relative_to(RESULTS)) for log in logs if not (log.with_suffix("") / "results.parquet").exists()]
    assert missing == [], f"run folders committed without results.parquet: {missing}"
