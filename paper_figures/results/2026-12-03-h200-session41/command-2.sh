#!/usr/bin/env bash
# Session 41, call 2 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session41/command-2.sh
# (NOTES v240). A dry run, on the one GPU, of issue 11's pair as session15/next-x2-pair.sh runs it on
# two (written in session 15, never run since): Llama-3-70B AWQ target / Llama-3.2-3B bf16 draft
# shapes, random weights, fused kernels, bs 8, acceptance replayed at rates from the paths folder;
# swiftspec --split 1+1, tree --tp 2 and ar, through run_2xh200.sh, then compare and e2e_checks.py.
# SWIFTSPEC_SHARED_GPU=1 puts both processes of each two-process system on the one GPU (PeerGroup
# for the TP group): times mean nothing, what counts is that every step loads and runs, so the
# script works the day two GPUs are lent. 1 prompt of qa and gsm8k, 64 new tokens.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit} SWIFTSPEC_SHARED_GPU=1
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths \
    paper_figures/results/2026-11-30-cpu-qwen-pair-graft paper_figures/results/cpu-qwen-pair > $O/replay.log 2>&1
echo "replay_union: exit $? ($(( $(date +%s) - START )) s)"
( while sleep 2; do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; done ) > $O/gpu-memory.log 2>&1 &
SAMPLER=$!
SMALL="--datasets qa,gsm8k --max-new-tokens 64"
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq --kernels fused" REPLAY=$O/replay TREE_BS=8 \
    DATA_DIR=$ROOT/.data/eagle bash paper_figures/run_2xh200.sh $O/pair $(( 540 - ($(date +%s) - START) )) \
    "1 --systems swiftspec --split 1+1 $SMALL" "1 --systems tree --tp 2 $SMALL" "1 --systems ar $SMALL" > $O/pair.log 2>&1
kill $SAMPLER
grep -hE "^==|skipped|^error" $O/pair.log | cut -c1-220
echo "largest process: $(sort -t, -k2 -n -r $O/gpu-memory.log | head -1)"
python3 -m swiftspec_bench.cli compare $O/pair --format markdown > $O/pair/compare.md 2>&1
echo "compare: exit $?"; grep -E "overall|shared|rows:|lossless" $O/pair/compare.md | cut -c1-200
python3 - $O/pair <<'PY' 2>&1 | tee $O/rows.log
import sys, pandas as pd
r = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
print(r[["system", "dataset", "quant", "kernels", "weights", "acceptance", "new_tokens", "mean_accepted"]].to_string(index=False))
PY
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/pair > $O/pair-checks.md 2>&1; echo "e2e_checks: exit $?"; tail -4 $O/pair-checks.md
rm -rf $O/replay $O/pair/results.csv
cd "$OUT" && tar czf c2.tgz c2 && rm -rf c2
