#!/usr/bin/env bash
# Session 39, call 4 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session39/command-4.sh
# (NOTES v234). Call 3's two 33B pairs again at 83311d9+ (the run's own process loads shapes only
# where every system runs in workers; call 3's TP 2 ranks ran out of memory beside its bf16 copy):
# run_8xh200.sh X2=1, both ranks on the one H200 (SWIFTSPEC_SHARED_GPU=1: outputs count, times do
# not), 1 qa prompt, 16 new tokens, resuming call 3's folders; stops at the deadline keeping its rows.
# Run from a clean export of the commit (.base, carried) while a helper edits the working tree.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SWIFTSPEC_SHARED_GPU=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
export DATA_DIR=$PWD/.data/eagle; cd .base; python3 -m pip install -q --no-deps -e . > /dev/null 2>&1  # python -m imports .base (the cwd) either way
# call 3's folders (committed with their rows) resumed: only the steps that ran out of memory run again.
O=$OUT/c4; mkdir -p $O && cp -r paper_figures/results/2026-12-03-h200-session39/c3/. $O/ && rm -f $O/run.log $O/env.log
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
X2=1 TOKENS=16 DATASETS=qa ONLY="${ONLY:-deepseek-coder-33b r1-distill-qwen-32b}" \
    bash paper_figures/run_8xh200.sh "$O" "${DEADLINE_S:-420}" 1 > "$O/run.log" 2>&1
echo "exit $?"
grep -E "^== |^error|skipped|Error|no split" "$O/run.log" | cut -c1-200
for d in "$O"/*/; do
  [ -e "$d/results.parquet" ] && [ "$(basename "$d")" != replay-source ] || continue
  python3 -m swiftspec_bench.cli compare "$d" --format markdown > "$d/compare.md" 2>&1
  echo "## $(basename "$d")"; grep -E "overall|shared" "$d/compare.md" | cut -d'|' -f4-8 | head -8
done
rm -rf "$O/replay-source" "$O"/*/results.csv
cd "$OUT" && tar czf c4.tgz c4 && rm -rf c4
