#!/usr/bin/env bash
# Session 31, call 5 (one H200, carry [".data"]): call 4's interleaved run without chain (the replay
# source holds no chain rows: the run refused it with its error line): tree and swiftspec (one GPU)
# under fused and persistent, query by query, qa + gsm8k + humaneval + sum x 2.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/s5; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
timeout -k 5 330 python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree,swiftspec \
    --kernels fused,persistent --interleave --datasets qa,gsm8k,humaneval,sum --limit 2 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -1 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-150
for s in tree swiftspec; do
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar $s:graft:fused --baseline $s:graft:fused > $O/paired-$s.md 2>&1
  grep -E "persistent" $O/paired-$s.md | tail -1
done
find $O -name results.parquet -delete
cd $OUT && tar czf s5.tgz s5
