#!/usr/bin/env bash
# Prepared at the end of session 30, not run: one H200, main at the commit given, carry [".data"].
# ~4 min. The persistent draft against fused in ONE run, query by query (--kernels fused,persistent
# --interleave: each query under both sets in turn, so both meet the machine's drift alike), tree,
# 8B / 1B shapes, replayed bs 12 with grafting, qa + gsm8k + humaneval x 4, after a throwaway run.
# Then the losslessness check of the same rows' sets with real acceptance is lossless_gpu.sh's (not here).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/ni; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree --kernels fused --datasets qa --limit 1 \
    --max-new-tokens 32 --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
timeout -k 5 400 python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree --kernels fused,persistent --interleave \
    --datasets qa,gsm8k,humaneval --limit 4 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -2 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "^\| llama" $O/e2e/compare.md | awk -F'|' '{print $4, $5, "tok/s", $7, "round", $14, "target", $15, "draft", $16}'
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar tree:graft:fused --baseline tree:graft:fused > $O/paired.md 2>&1; tail -8 $O/paired.md
find $O -name results.parquet -delete
cd $OUT && tar czf ni.tgz ni
