#!/usr/bin/env bash
# Session 40, call 1 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session40/command-1.sh
# (NOTES v235). Session 39's call 4 again at d253e0a+: the two 33B pairs' TP 2 step (ar, chain and
# tree at --tp 2) with both ranks on the one H200 (SWIFTSPEC_SHARED_GPU=1: outputs count, times do
# not), resuming call 3's folders (only the steps that ran out of memory run again); a TP rank now
# draws its random bf16 model part by part (random_parts.py). Then tests/test_gpu.py at this commit.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SWIFTSPEC_SHARED_GPU=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit} PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O && cp -r paper_figures/results/2026-12-03-h200-session39/c3/. $O/
rm -f $O/run.log $O/env.log
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
# Each rank's peak GPU memory, sampled every 2 s while the run goes (nvidia-smi's per-process view).
( while sleep 2; do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; done ) > $O/gpu-memory.log 2>&1 &
SAMPLER=$!
X2=1 TOKENS=16 DATASETS=qa ONLY="${ONLY:-deepseek-coder-33b r1-distill-qwen-32b}" \
    bash paper_figures/run_8xh200.sh "$O" "${DEADLINE_S:-360}" 1 > "$O/run.log" 2>&1
echo "run exit $? ($(( $(date +%s) - START )) s)"; kill $SAMPLER
grep -E "^== |^error|skipped|Error|no split" "$O/run.log" | cut -c1-200
echo "largest process: $(sort -t, -k2 -n -r $O/gpu-memory.log | head -1)"
for d in "$O"/*/; do
  [ -e "$d/results.parquet" ] && [ "$(basename "$d")" != replay-source ] || continue
  python3 -m swiftspec_bench.cli compare "$d" --format markdown > "$d/compare.md" 2>&1
  echo "## $(basename "$d")"; grep -E "overall|shared" "$d/compare.md" | cut -d'|' -f4-8 | head -8
done
rm -rf "$O/replay-source" "$O"/*/results.csv
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT: python3 -m pytest -q -x tests/test_gpu.py"
  time timeout -k 5 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py; } > $O/gpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
echo "test_gpu.py: $(grep -E 'passed|failed' $O/gpu-tests-$SWIFTSPEC_COMMIT.log | tail -1) ($(( $(date +%s) - START )) s)"
cd "$OUT" && tar czf c1.tgz c1 && rm -rf c1
