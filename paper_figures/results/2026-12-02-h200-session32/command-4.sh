#!/usr/bin/env bash
# Session 32, call 4 (one H200, carry [".data"]): --kernels fused,auto at tree bs 8 (auto resolves to
# persistent: the 1B draft fits and every verification is at most 8 wide, so the 8B target runs the
# target build too): ar, tree and lockstep swiftspec, query by query, six datasets x 2, 256 new
# tokens, acceptance replayed from the real Qwen pair at bs 8 (graft-paths: no chain rows there).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths
timeout -k 5 420 python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random \
    --device cuda --dtype bfloat16 --acceptance replay:$R --tree-bs 8 --tree-w 8 --data-dir .data/eagle \
    --max-new-tokens 256 --systems ar,tree,swiftspec --kernels fused,auto --interleave --limit 2 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
for s in ar tree:graft swiftspec:graft; do
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar ar:fused --baseline $s:fused > $O/paired-${s%%:*}.md 2>&1
  grep -E "^\| ${s}:persistent" $O/paired-${s%%:*}.md | cut -c1-160
done
find $O -name results.parquet -delete
cd $OUT && tar czf c4.tgz c4
