#!/usr/bin/env bash
# Prepared in session 37 (not run: x2 not lent; nvidia-h200-x2, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session37/next-x2-issue12-dry.sh
# Issue 12's dry run of the whole matrix on two GPUs: run_8xh200.sh with X2=1 (the five pairs at their
# real shapes, random weights, replayed acceptance, the 70B-class targets in AWQ; ar, chain, tree at
# TP 2, swiftspec at 1+1), 1 prompt a dataset, 128 new tokens, stopping at the deadline with its rows.
# What it must show: every pair loads and runs every system on two GPUs (no error line), rows say
# quant awq for the 70B-class targets, and the picked split is 1+1.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
mkdir -p "$OUT/x2dry"
python3 -m pip install -q --no-deps -e . > "$OUT/x2dry/pip.log" 2>&1
X2=1 TOKENS=128 bash paper_figures/run_8xh200.sh "$OUT/x2dry" "${DEADLINE_S:-540}" 1 > "$OUT/x2dry/run.log" 2>&1
echo "exit $?"
grep -E "^== (exit|picked)|^error|skipped|no split" "$OUT/x2dry/run.log"
for d in "$OUT"/x2dry/*/; do
  [ -e "$d/results.parquet" ] && python3 -m swiftspec_bench.cli compare "$d" > "$d/../$(basename "$d").compare.txt" 2>&1
done
cd "$OUT" && tar czf x2dry.tgz x2dry && rm -rf x2dry
