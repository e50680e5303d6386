#!/usr/bin/env bash
# Call 2 of the twenty-fifth session (nvidia-h200, commit 4a621a3): the twenty-fourth's prepared rejudge as written.
export SWIFTSPEC_COMMIT=4a621a3; bash paper_figures/results/2026-12-01-h200-session24/next-h200-rejudge.sh
