#!/usr/bin/env bash
# The next session's first call on one H200 (written in the twentieth; NOTES v127, v128): the GEMM
# phases on main, then the residual prefetch's A/B. ~8 min: give it the call's 600 s.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-01-h200-session20
bash $HERE/next-h200-phases.sh
bash $HERE/next-h200-residual.sh
