#!/usr/bin/env bash
# The losslessness pass (issue 8, item 2): every system with REAL acceptance against ar, at each
# model's real shape with random weights, with a draft that is the target (same preset and seed:
# identical weights, checked when loading; it accepts every drafted token) and with a perturbed
# draft (--draft-noise: the target's weights plus relative Gaussian noise; it also rejects).
#
#   bash paper_figures/lossless_gpu.sh OUT_ROOT
#
# One run folder per (model, draft kind): OUT_ROOT/MODEL-same, OUT_ROOT/MODEL-noise. In each, ar,
# chain, tree, swiftspec (lockstep) and hf-ar (draft = target folders only: it has no draft) run in
# one process on one GPU; then, when two GPUs are visible (or on the CPU, over gloo), ar/chain/tree
# --tp 2 and swiftspec --split 1+1 into the same folder, so every system is compared with ar.
# `swiftspec-bench compare` checks each folder (its output in OUT_ROOT/compare-*.txt); the last
# lines are one table: per model, draft kind and system, queries identical to ar, near-tie
# divergences and real ones. Exit 1 if any folder has a real divergence.
#
# Settings (environment): MODELS ("llama-3.2-1b llama-3-8b"), DEVICE (cuda), DTYPE (bfloat16 on
# cuda, float32 on cpu), NOISE (0.01), LIMIT (2 prompts of gsm8k, qa, humaneval), MAX_NEW (64),
# DATA_DIR (.data/eagle), BUDGET_S (450: each step gets what is left, then stops keeping its rows),
# KERNELS (torch; fused: our cuda/ kernels, rows labelled :fused and held against ar:fused), GRAFTS
# ("off"; "off ngram": tree and swiftspec also with grafting, in the same folders), AT_ONCE (all: how
# many configurations share the GPUs at a time; under KERNELS=persistent an engine holds its weights
# twice, the kernel's page images beside them, so two Llama-3-8B pairs at once take ~130 GB: 1).
# DRAFTS ("same noise": draft = target, then perturbed; "noise" runs only the perturbed half).
# QUANT (none; awq: the target's layers RTN-quantized to INT4 AWQ as `--quant awq` runs them, the draft
# staying bf16: draft = target is the AWQ target's dequantized twin, which accepts nearly every token, and
# the perturbed draft is that twin plus noise; hf-ar left out: it has no such model).
# SHARED=1 on one GPU: the across-process part runs too, its processes taking turns on the GPU and
# their TP groups over peer memory instead of NCCL (SWIFTSPEC_SHARED_GPU, runtime/gpus.py): outputs
# checked, times void.
# The CPU check of the script's logic: DEVICE=cpu MODELS=tiny-llama MAX_NEW=16 LIMIT=1.
set -uo pipefail
OUT=${1:?usage: lossless_gpu.sh OUT_ROOT}
MODELS=${MODELS:-llama-3.2-1b llama-3-8b}
DEVICE=${DEVICE:-cuda}
DTYPE=${DTYPE:-$([ "$DEVICE" = cuda ] && echo bfloat16 || echo float32)}
NOISE=${NOISE:-0.01}
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-450} ))
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
mkdir -p "$OUT"

if [ "$DEVICE" = cuda ]; then
  GPUS=$(python3 -c 'import torch; print(torch.cuda.device_count())')
  TWO=$(( GPUS >= 2 || (GPUS == 1 && ${SHARED:-0} == 1) ))
  PAIR_GPUS=0,1 PAIRS_AT_ONCE=2
  # Used only under SHARED=1: one configuration at a time, as its ranks already take turns on the
  # GPU (two at once ran out of its memory at the 8B: NOTES v220).
  if (( GPUS == 1 )); then export SWIFTSPEC_SHARED_GPU=1; PAIR_GPUS=0 PAIRS_AT_ONCE=1; fi
else
  GPUS=0 TWO=1  # gloo ranks stand in for GPUs
fi

run() {  # run FOLDER GPU ARGS...: one swiftspec-bench run into FOLDER under what is left of the budget
  local dir=$1 gpu=$2 left=$(( DEADLINE - $(date +%s) ))
  shift 2
  if (( left < 20 )); then echo "skipped (budget): $dir $*" | tee -a "$dir.log"; return; fi
  echo "== $(date -u +%T) $dir: $*" >> "$dir.log"
  local model=${dir##*/}; model=${model%-*}
  CUDA_VISIBLE_DEVICES=$gpu timeout "$left" python3 -m swiftspec_bench.cli run --target "$model" --draft "$model" \
      --weights random --device "$DEVICE" --dtype "$DTYPE" --datasets gsm8k,qa,humaneval --limit "${LIMIT:-2}" \
      --max-new-tokens "${MAX_NEW:-64}" --data-dir "${DATA_DIR:-.data/eagle}" --kernels "${KERNELS:-torch}" \
      --quant "${QUANT:-none}" \
      --out "$dir" "$@" >> "$dir.log" 2>&1
  echo "== exit $?" >> "$dir.log"
}

configs=()
for model in $MODELS; do for kind in ${DRAFTS:-same noise}; do configs+=("$model $kind"); done; done
draft_args() { [ "$1" = noise ] && echo "--draft-noise $NOISE"; }

# One process each: every configuration at once, spread over the GPUs (CPU: one at a time).
i=0
for c in "${configs[@]}"; do
  set -- $c
  systems=ar,chain,tree,swiftspec$([ "$2" = same ] && [ "${QUANT:-none}" = none ] && echo ,hf-ar)
  gpu=$(( GPUS ? i % GPUS : 0 ))
  one_process() {  # every system, then the grafting ones again for each further graft setting
    run "$OUT/$1-$2" "$3" --systems "$systems" --graft off $(draft_args "$2")
    for g in ${GRAFTS:-off}; do
      [ "$g" = off ] || run "$OUT/$1-$2" "$3" --systems tree,swiftspec --graft "$g" $(draft_args "$2")
    done
  }
  if [ "$DEVICE" = cuda ]; then
    one_process "$1" "$2" "$gpu" &
  else
    one_process "$1" "$2" ""
  fi
  i=$(( i + 1 ))
  if (( i % ${AT_ONCE:-${#configs[@]}} == 0 )); then wait; fi
done
wait

# Across two processes: two configurations at a time share the two GPUs (one at a time on one, SHARED=1).
if (( TWO )); then
  i=0
  for c in "${configs[@]}"; do
    set -- $c
    two_processes() {
      local gpus=$([ "$DEVICE" = cuda ] && echo "$PAIR_GPUS")
      run "$OUT/$1-$2" "$gpus" --systems ar,chain,tree,swiftspec --tp 2 --split 1+1 --graft off $(draft_args "$2")
      for g in ${GRAFTS:-off}; do
        [ "$g" = off ] || run "$OUT/$1-$2" "$gpus" --systems tree,swiftspec --tp 2 --split 1+1 --graft "$g" $(draft_args "$2")
      done
    }
    two_processes "$1" "$2" &
    i=$(( i + 1 ))
    if [ "$DEVICE" != cuda ] || (( i % PAIRS_AT_ONCE == 0 )); then wait; fi
  done
  wait
fi

status=0
for c in "${configs[@]}"; do
  set -- $c
  python3 -m swiftspec_bench.cli compare "$OUT/$1-$2" > "$OUT/compare-$1-$2.txt" 2>&1
  code=$?
  echo "$1 $2: compare exit $code ($(grep -m1 -E '^(lossless|error):' "$OUT/compare-$1-$2.txt"))"
  (( code == 0 )) || status=1
done
python3 - "$OUT" "${configs[@]}" <<'EOF'
import sys
from pathlib import Path

import pandas as pd

from swiftspec_bench.lossless import check
from swiftspec_bench.results import read_frame, results_file

out, rows = Path(sys.argv[1]), []
for config in sys.argv[2:]:
    model, kind = config.split()
    folder = out / f"{model}-{kind}"
    if results_file(folder) is None:
        rows.append({"model": model, "draft": kind, "system": "(no rows)"})
        continue
    divergences, summary = check(read_frame(folder))
    for r in summary.to_dict("records"):
        agree = divergences[(divergences.system == r["system"]) & (divergences["class"] == "agreement")]
        rows.append({"model": model, "draft": kind, "system": r["system"], "queries": r["queries"],
                     "identical": r["identical"], "near-tie": r["near-tie"], "real": r["real"],
                     "follows": r["follows"],  # later turns after a divergence (none in these datasets)
                     "placement": r["placement"],  # ar@tpN against ar in 16 bits (lossless.py)
                     "hf agreement (tokens)": ",".join(str(p) for p in agree.position) or "-"})
print(pd.DataFrame(rows).to_string(index=False))
EOF
exit $status
