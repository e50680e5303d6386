#!/usr/bin/env bash
# Prepared at the end of session 31, not run: for a session lent nvidia-h200-x2 (carry [".data"]).
# session29/next-x2-persistent.sh's question asked as one interleaved run: tree on one GPU and
# swiftspec@1+1, each under fused and persistent (the draft on the persistent kernel; --kernels
# auto picks it since session 31), query by query, so both sets meet the machine's drift alike.
# 8B / 1B shapes, random bf16 weights, replayed bs 12 with grafting, 6 datasets x 3 prompts, after a
# throwaway run; e2e_checks.py paired ratios (and link wait, first round). Then the persistent
# draft's losslessness with two GPUs (lossless_gpu.sh, split 1+1 rows too), one prompt a dataset, in
# what is left. ~9 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/x2i; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree --kernels fused --datasets qa --limit 1 \
    --max-new-tokens 32 --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
timeout -k 5 330 python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree,swiftspec --split 1+1 \
    --kernels fused,persistent --interleave --datasets all --limit 3 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -1 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-150
for s in tree:graft swiftspec@1+1:graft; do
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar $s:fused --baseline $s:fused > $O/paired-${s%%[:@]*}.md 2>&1
  tail -4 $O/paired-${s%%[:@]*}.md
done
MODELS=llama-3.2-1b KERNELS=persistent LIMIT=1 BUDGET_S=$(( 560 - ($(date +%s) - START) )) \
    bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless exit $? ($(( $(date +%s) - START )) s)"; tail -14 $O/lossless.log
find $O -name results.parquet -delete
cd $OUT && tar czf x2i.tgz x2i
