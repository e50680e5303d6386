#!/usr/bin/env bash
# Issue 12: the paper-scale matrix on nvidia-h200-x8 (not lent yet; not run). Five pairs at their
# real shapes with random weights, acceptance replayed from the real Qwen pair's recordings, fused
# kernels (--kernels auto), the 70B-class targets in AWQ as the paper ran them:
#   ar, chain, tree at TP 8; swiftspec at the paper's split (4+4 for the 70B-class pairs, 6+2 for
#   the 32-33B ones; a degree that does not divide a model's heads is zero-padded by the runtime).
#
#   bash paper_figures/run_8xh200.sh RUN_ROOT DEADLINE_S [LIMIT]     (TOKENS: new tokens, 512)
#
# One run folder per pair under RUN_ROOT; each step resumes and stops at the deadline keeping its rows.
# DRY=1: the same matrix on this machine's CPU with tiny-llama / tiny-qwen2 standing in for every
# pair (--tp 2, --split 1+1 over gloo, 8 new tokens): a check of the script, not a result.
# X2=1: the same pairs at their real shapes on nvidia-h200-x2 (issue 12's dry run with the smaller
# splits): ar, chain, tree at TP 2 and swiftspec at 1+1 (the only split of two GPUs; the AWQ 70B-class
# targets fit one H200, the 32-33B ones in bf16 too); rows, not the paper's configuration.
# H1=1: the same pairs at their real shapes on one H200 (nvidia-h200): ar, chain, tree and lockstep
# swiftspec in one process at TP 1 (every target fits one H200: the 70B-class in AWQ), no split; a
# check that every pair loads and runs at its real shape, with times of one GPU.
# ONLY="TARGET ...": run only the pairs of those targets; DATASETS: a comma list instead of all.
# The split the suite picks itself: swiftspec at each of CANDIDATES ("2+6 4+4 6+2", the paper's
# Fig. 9 degrees) on one prompt a dataset into RUN_ROOT/PAIR-calibrate, the fastest over the queries
# all ran (placement.best_split, paper_figures/pick_split.py), then the full run at that split where
# it is not the paper's. The calibration folder is Fig. 9's data. The AWQ targets build layer by
# layer on their ranks (models/random_parts.py). `swiftspec-bench plot` draws figures 6, 7 and 9.
set -uo pipefail
ROOT=${1:?run root}
DEADLINE=$(( $(date +%s) + ${2:-3000} ))
LIMIT=${3:-20}
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
PAIRS=("llama-3-70b llama-3.2-3b 4+4 awq" "qwen2-72b qwen2-1.5b 4+4 awq" "deepseek-coder-33b deepseek-coder-1.3b 6+2 none"
       "r1-distill-qwen-32b r1-distill-qwen-1.5b 6+2 none" "r1-distill-llama-70b r1-distill-llama-8b 4+4 awq")
# The real pair's recordings with grafting (tree, swiftspec at d = 2..8; the CLI grafts by default),
# then cpu-qwen-pair's for chain: one replay source, built here unless REPLAY names one.
if [ -z "${REPLAY:-}" ]; then
  REPLAY=$ROOT/replay-source
  PYTHONPATH=. python3 "$(dirname "$0")/replay_union.py" "$REPLAY" paper_figures/results/2026-11-30-cpu-qwen-pair-graft \
      paper_figures/results/cpu-qwen-pair > /dev/null
fi
for pair in "${PAIRS[@]}"; do
  set -- $pair
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $1 "* ]] && continue
  target=$1 draft=$2 split=$3 quant=$4 tp=8 tokens=${TOKENS:-512} device=cuda datasets=${DATASETS:-all}
  candidates=${CANDIDATES:-2+6 4+4 6+2}
  if [ "${DRY:-0}" = 1 ]; then  # sum's prompts pass the tiny presets' 2048 positions
    target=tiny-llama draft=tiny-llama split=1+1 quant=none tp=2 tokens=8 device=cpu datasets=mt_bench,humaneval,gsm8k,alpaca,qa
    candidates="1+1 2+1"
  fi
  if [ "${X2:-0}" = 1 ]; then
    split=1+1 tp=2 candidates=1+1
  fi
  out="$ROOT/$1"
  step() {  # step FOLDER LIMIT ARGS...
    local dir=$1 limit=$2 left=$(( DEADLINE - $(date +%s) ))
    shift 2
    if (( left < 30 )); then echo "skipped (deadline): $dir $*"; return; fi
    echo "== $(date -u +%T) $dir: $*"
    timeout "$left" python3 -m swiftspec_bench.cli run --target "$target" --draft "$draft" --weights random \
        --device "$device" --acceptance "replay:$REPLAY" --datasets "$datasets" --limit "$limit" --max-new-tokens "$tokens" \
        --tree-bs 8 --tree-w 8 --chain-k 7 --quant "$quant" --data-dir "${DATA_DIR:-.data/eagle}" --out "$dir" "$@"
    echo "== exit $?"
  }
  if [ "${H1:-0}" = 1 ]; then
    step "$out" "$LIMIT" --systems ar,chain,tree,swiftspec
    continue
  fi
  step "$out" "$LIMIT" --systems ar,chain,tree --tp "$tp"
  step "$out" "$LIMIT" --systems swiftspec --split "$split"
  for c in $candidates; do step "$out-calibrate" 1 --systems swiftspec --split "$c"; done
  picked=$(PYTHONPATH=. python3 "$(dirname "$0")/pick_split.py" "$out-calibrate") || { echo "no split picked: $out"; continue; }
  echo "== picked split $picked for $1"
  [ "$picked" = "$split" ] || step "$out" "$LIMIT" --systems swiftspec --split "$picked"
done
