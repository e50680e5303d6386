#!/usr/bin/env bash
# Call 2 of the twenty-second session (NOTES v132, v133): the twenty-first session's prepared part 2,
# run as written, at 1b4b914 on nvidia-h200, the machine still warm (output: reorder/, from $OUT/reorder.tgz).
export SWIFTSPEC_COMMIT=1b4b914
PART=2 bash paper_figures/results/2026-12-01-h200-session21/next-h200.sh 2>&1 | tail -40
