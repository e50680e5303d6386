#!/usr/bin/env bash
# Issue 9's GPU benchmark on nvidia-h200-x2: swiftspec@1+1 with chain grafting beside without it and
# beside tree@tp2 (the serial baseline on both GPUs). Llama-3-8B / Llama-3.2-1B shapes, random bf16
# weights, acceptance replayed from the real Qwen pair's CPU recordings with and without grafting
# (graft_cpu.sh: the replay follows each row's grafts: how often a step's lookup fired and how many
# chain nodes it kept), six datasets x LIMIT prompts (10), 256 new tokens, --kernels auto (fused).
#
#   bash paper_figures/graft_2xh200.sh RUN_DIR DEADLINE_S
#
# Steps resume into RUN_DIR; each stops at the deadline, keeping its finished rows.
set -uo pipefail
RUN=${1:?run dir}
REPLAY=${REPLAY:-paper_figures/results/2026-11-30-cpu-qwen-pair-graft} bash "$(dirname "$0")/run_2xh200.sh" \
    "$RUN" "${2:-330}" "${LIMIT:-10} --systems swiftspec --split 1+1 --graft ngram" \
    "${LIMIT:-10} --systems swiftspec --split 1+1" "${LIMIT:-10} --systems tree --tp 2"
python3 -m swiftspec_bench.cli compare "$RUN" --format markdown > "$RUN/compare.md" 2>&1
grep -E "overall|lossless" "$RUN/compare.md"
