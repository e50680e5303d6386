#!/usr/bin/env bash
# Call 1 of the seventeenth session (nvidia-h200; NOTES v104): the sixteenth's prepared script as
# written (the AWQ GEMM's late trigger, the append as a kernel again for the 70B AWQ forward, the
# append-order patch's GPU tests and forward rows). Its output folder `next` was renamed c1.
set -u
bash paper_figures/results/2026-12-01-h200-session16/next-h200.sh
