#!/usr/bin/env bash
# The next session's first calls on one H200 (written in the twenty-first; NOTES v131-v133): the
# norm GEMMs' shared-memory ring, then the attention's reordered tree-row loads and its trigger
# from the mergers, each A/B'd in a patched copy. ~9 min in all: run the parts as two calls
# (PART=1, then PART=2), each ~4-5 min.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-01-h200-session21
[ "${PART:-1}" = 1 ] && bash $HERE/next-h200-ring.sh
[ "${PART:-1}" = 2 ] && bash $HERE/next-h200-reorder.sh
true
