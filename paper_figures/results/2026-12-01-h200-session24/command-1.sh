#!/usr/bin/env bash
# Call 1 of the twenty-fourth session (nvidia-h200): the twenty-third's next-h200.sh as written (v142).
export SWIFTSPEC_COMMIT=70aead9; bash paper_figures/results/2026-12-01-h200-session23/next-h200.sh
# Output: c1/ (the script's $OUT/n1).
