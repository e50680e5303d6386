#!/usr/bin/env bash
# Session 19, call 2 (nvidia-h200): the eighteenth session's prepared script, unchanged.
export SWIFTSPEC_COMMIT=ad20590; bash paper_figures/results/2026-12-01-h200-session18/next-h200-mergers.sh
