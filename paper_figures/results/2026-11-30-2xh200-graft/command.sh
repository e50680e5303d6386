#!/usr/bin/env bash
# Issue 9's GPU benchmark (device tool, nvidia-h200-x2, 2026-11-30 10:04 UTC, commit 9610adb):
# swiftspec@1+1 with and without chain grafting and tree@tp2, --kernels auto (fused), Llama-3-8B /
# Llama-3.2-1B shapes, random bf16 weights, acceptance replayed from replay-source/ (built with
# replay_union.py from 2026-11-30-cpu-qwen-pair-graft -- swiftspec at d = 2 and 3 without
# grafting, d = 3 with it, recorded on the real pair with the grafts' statistics -- and
# cpu-qwen-pair's serial tree rows), six datasets x 10 prompts (70 queries), 256 new tokens.
PYTHONPATH=. python3 paper_figures/replay_union.py paper_figures/results/2026-11-30-2xh200-graft/replay-source \
    paper_figures/results/2026-11-30-cpu-qwen-pair-graft paper_figures/results/cpu-qwen-pair
REPLAY=paper_figures/results/2026-11-30-2xh200-graft/replay-source bash paper_figures/graft_2xh200.sh $OUT/graft 345
