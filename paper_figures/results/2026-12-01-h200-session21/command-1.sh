#!/usr/bin/env bash
# Call 1 of the twenty-first session: the twentieth's prepared script as it stands (NOTES v127, v128),
# on nvidia-h200 at commit bde00d2; its output is c1/ (phases/, residual/, console.log).
export SWIFTSPEC_COMMIT=bde00d2
bash paper_figures/results/2026-12-01-h200-session20/next-h200.sh 2>&1 | tee $OUT/console.log
