#!/usr/bin/env bash
# Issue 9's verification budget on the real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 CPU (2 cores shared
# with other work: latencies are not speed results), 64 new tokens, --tree-bs 12, w 8, grafting
# (length 6, n-grams 3 then 2): ar and swiftspec d = 3 with grafting, one prompt a dataset (7
# queries). Made by paper_figures/graft_cpu.sh's step 2 (2026-11-30, 11:18-11:55 UTC):
#   bash paper_figures/graft_cpu.sh paper_figures/results/2026-11-30-cpu-qwen-pair-graft
# which writes this folder as its OUT-bs12. compare.md: lossless yes.
