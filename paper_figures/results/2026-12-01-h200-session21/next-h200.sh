#!/usr/bin/env bash
# The next session's first call on one H200 (written in the twenty-first; NOTES v131, v132): the
# norm GEMMs' shared-memory ring, then the attention's reordered tree-row loads, each A/B'd in a
# patched copy. ~8 min: give it the call's 600 s (or run the parts in two calls).
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-01-h200-session21
bash $HERE/next-h200-ring.sh
bash $HERE/next-h200-reorder.sh
