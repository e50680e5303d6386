#!/usr/bin/env bash
# Session 39, call 3 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session39/command-3.sh
# (NOTES v233). Issue 12's x2 dry run (run_8xh200.sh X2=1: ar, chain, tree at TP 2, swiftspec at 1+1,
# the calibration) for the three pairs never run across processes at their real shapes (qwen2-72b's
# FFN 29568 padded per rank, deepseek-coder-33b's 56 / 8 heads, r1-distill-qwen-32b's 40 / 8), with
# both ranks on the one H200 (SWIFTSPEC_SHARED_GPU=1: outputs count, times do not), 1 qa prompt,
# 16 new tokens; stops at the deadline keeping its rows.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SWIFTSPEC_SHARED_GPU=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
X2=1 TOKENS=16 DATASETS=qa ONLY="${ONLY:-qwen2-72b deepseek-coder-33b r1-distill-qwen-32b}" \
    bash paper_figures/run_8xh200.sh "$O" "${DEADLINE_S:-550}" 1 > "$O/run.log" 2>&1
echo "exit $?"
grep -E "^== |^error|skipped|Error|no split" "$O/run.log" | cut -c1-200
for d in "$O"/*/; do
  [ -e "$d/results.parquet" ] && [ "$(basename "$d")" != replay-source ] || continue
  python3 -m swiftspec_bench.cli compare "$d" --format markdown > "$d/compare.md" 2>&1
  echo "## $(basename "$d")"; grep -E "overall|shared" "$d/compare.md" | cut -d'|' -f4-8 | head -8
done
rm -rf "$O/replay-source" "$O"/*/results.csv
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
