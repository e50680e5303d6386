#!/usr/bin/env bash
# The bs 16 folder's command.sh at bs 12 (run after it, the same session): see that script.
BS=12 exec bash paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs16/command.sh "$@"
