#!/usr/bin/env bash
# Session 32, call 2 (one H200, carry [".data"]): (1) ar, chain, tree and lockstep swiftspec under
# fused and persistent (now the target too: Llama-3-8B shape on the target build), query by query,
# six datasets x 2, 256 new tokens, acceptance replayed from the real Qwen pair at bs 12; (2) the
# losslessness pass under persistent at the Llama-3.2-1B shape (target and draft on the draft build).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
timeout -k 5 400 python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems ar,chain,tree,swiftspec \
    --kernels fused,persistent --interleave --limit 2 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
for s in ar chain tree:graft swiftspec:graft; do
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar ar:fused --baseline $s:fused > $O/paired-${s%%:*}.md 2>&1
  grep -E "^\| ${s}:persistent" $O/paired-${s%%:*}.md | cut -c1-160
done
MODELS=llama-3.2-1b KERNELS=persistent BUDGET_S=$(( 575 - ($(date +%s) - START) )) \
    bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless exit $? ($(( $(date +%s) - START )) s)"; tail -n 10 $O/lossless.log | cut -c1-140
find $O -name results.parquet -delete
cd $OUT && tar czf c2.tgz c2
