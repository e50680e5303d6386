#!/usr/bin/env bash
# Call 1 of the eighteenth session (nvidia-h200; NOTES v111 outcome): the seventeenth's prepared
# script as it was, run at 87feaf5 (its output folder is next/, copied here as c1/):
#   SWIFTSPEC_COMMIT=87feaf5 bash paper_figures/results/2026-12-01-h200-session17/next-h200.sh
exec bash "$(dirname "$0")/../2026-12-01-h200-session17/next-h200.sh"
