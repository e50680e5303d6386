#!/usr/bin/env bash
# Call 1 of the twenty-third session: the twenty-second's next-h200.sh as written (v136, the early
# merge), run as `export SWIFTSPEC_COMMIT=736e5c2; bash paper_figures/results/2026-12-01-h200-session22/next-h200.sh`;
# its output ($OUT/early) is c1/.
exec bash paper_figures/results/2026-12-01-h200-session22/next-h200.sh
