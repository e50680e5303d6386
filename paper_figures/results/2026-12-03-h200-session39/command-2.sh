#!/usr/bin/env bash
# Session 39, call 2 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session39/command-2.sh
# (NOTES v232). Issue 12's five pairs at their real shapes on one H200 (run_8xh200.sh H1=1): random
# weights, the 70B-class targets in AWQ, acceptance replayed from the real Qwen pair's recordings
# (bs 8, grafting), fused kernels; ar, chain, tree and lockstep swiftspec in one process; 1 prompt a
# dataset, 64 new tokens; stops at the deadline keeping its rows. ONLY picks the pairs.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
H1=1 TOKENS=64 ONLY="${ONLY:-}" bash paper_figures/run_8xh200.sh "$O" "${DEADLINE_S:-540}" 1 > "$O/run.log" 2>&1
echo "exit $?"
grep -E "^== |^error|skipped|Error" "$O/run.log" | cut -c1-200
for d in "$O"/*/; do
  [ -e "$d/results.parquet" ] || continue
  python3 -m swiftspec_bench.cli compare "$d" --format markdown > "$d/compare.md" 2>&1
  echo "## $(basename "$d")"; grep -E "overall|speedup" "$d/compare.md" | cut -d'|' -f4-11 | head -6
done
rm -rf "$O/replay-source" "$O"/*/results.csv
cd "$OUT" && tar czf c2.tgz c2 && rm -rf c2
