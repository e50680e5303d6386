#!/usr/bin/env bash
# Issue "Disaggregated multi-GPU runtime": the benchmark on nvidia-h200-x2 (2x H200, NVLink).
# Llama-3-8B-Instruct target and Llama-3.2-1B-Instruct draft shapes, random bf16 weights, acceptance
# replayed from the real Qwen-pair CPU run (paper_figures/results/cpu-qwen-pair), six datasets,
# 256 new tokens. Kernels: --kernels auto unless a step says otherwise (persistent where the draft
# fits the persistent kernel, since session 31, else fused: our cuda/ kernels, rows labelled
# :persistent or :fused; before issue 10 every row ran torch ops, kernels column torch-compile).
# REPLAY overrides the replayed recordings; TARGET, DRAFT (presets), TREE_BS and EXTRA (more run
# options, before each step's own, which win) the pair and settings.
#
#   bash paper_figures/run_2xh200.sh RUN_DIR DEADLINE_S "LIMIT ARGS..." ["LIMIT ARGS..." ...]
#
# Each quoted step is one `swiftspec-bench run` into RUN_DIR (which it resumes), in the order given;
# a step stops, keeping its finished rows, when the deadline passes, so a later call carries on.
# The step `lossless` runs the losslessness pass for the same shapes and systems with real
# acceptance (lossless_gpu.sh: draft = target and a perturbed draft, bf16) into RUN_DIR-lossless:
# replayed rows cannot show that the systems emit the target's tokens, so its folders are
# committed beside them.
# The calls made are in each results/*2xh200*/command.sh.
set -uo pipefail
RUN=${1:?run dir}
DEADLINE=$(( $(date +%s) + ${2:-560} ))
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
COMMON=(--target "${TARGET:-llama-3-8b}" --draft "${DRAFT:-llama-3.2-1b}" --weights random --device cuda
        --dtype bfloat16 --acceptance "replay:${REPLAY:-paper_figures/results/cpu-qwen-pair}" --datasets all
        --max-new-tokens 256 --tree-bs "${TREE_BS:-8}" --tree-w 8 --chain-k 7 --data-dir "${DATA_DIR:-.data/eagle}"
        --out "$RUN" ${EXTRA:-})
step() {  # step LIMIT ARGS...: one resumable invocation under what is left of the deadline
  local left=$(( DEADLINE - $(date +%s) ))
  if (( left < 30 )); then echo "skipped (deadline): $*"; return; fi
  echo "== $(date -u +%T) swiftspec-bench run --limit $1 ${*:2}"
  timeout "$left" python3 -m swiftspec_bench.cli run "${COMMON[@]}" --limit "$@"
  echo "== exit $?"
}
lossless() {  # the pass under what is left of the deadline
  local left=$(( DEADLINE - $(date +%s) ))
  echo "== $(date -u +%T) lossless_gpu.sh $RUN-lossless"
  BUDGET_S=$(( left - 60 )) bash "$(dirname "$0")/lossless_gpu.sh" "$RUN-lossless"
  echo "== exit $?"
}
shift 2
for s in "$@"; do
  if [ "$s" = lossless ]; then lossless; else step $s; fi
done
