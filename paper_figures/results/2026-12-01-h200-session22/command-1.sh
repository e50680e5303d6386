#!/usr/bin/env bash
# Call 1 of the twenty-second session (NOTES v131): the twenty-first session's prepared part 1, run
# as written, at 1b4b914 on nvidia-h200 (output: ring/, from $OUT/ring.tgz).
export SWIFTSPEC_COMMIT=1b4b914
PART=1 bash paper_figures/results/2026-12-01-h200-session21/next-h200.sh 2>&1 | tail -40
