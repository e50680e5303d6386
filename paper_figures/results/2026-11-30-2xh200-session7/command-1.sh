#!/usr/bin/env bash
# Seventh session, call 1 (nvidia-h200-x2): the CPU-side changes of the sixth session, first GPU run.
# 1) gemm_plan_ab.py on GPU 0 (v26: today's gemm.plan against a plan balanced over the SMs).
# 2) swiftspec@1+1 at --draft-steps 3 and 4 given and at the fitted d (v25), tree@tp2 beside, on
#    the 28 queries of session 6's call 2 (--limit 4; 8B/1B shapes, random bf16 weights, replayed
#    acceptance, bs 8, grafting, 256 tokens); the verdict before the cache keep (v28) in all of them.
# 3) bs 12 against bs 8 (v27): swiftspec@1+1 (fitted d) and tree@tp2, replayed from the bs 12
#    recordings (results/2026-11-30-cpu-qwen-pair-graft-bs12, 4 prompts a dataset).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/gemm_plan_ab.py > $O/gemm-plan-ab.md 2> $O/gemm-plan-ab.log
echo "gemm_plan_ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/gemm-plan-ab.md
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-bs8 $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( 400 - ($(date +%s) - START) ))
REPLAY=$O/replay-bs8 TREE_BS=8 bash paper_figures/run_2xh200.sh $O/bs8 $LEFT \
    "4 --systems swiftspec --split 1+1 --kernels fused --draft-steps 3" \
    "4 --systems swiftspec --split 1+1 --kernels fused --draft-steps 4" \
    "4 --systems swiftspec --split 1+1 --kernels fused" "4 --systems tree --tp 2 --kernels fused" > $O/bs8.log 2>&1
grep -E "^==|skipped" $O/bs8.log
LEFT=$(( 560 - ($(date +%s) - START) ))
REPLAY=paper_figures/results/2026-11-30-cpu-qwen-pair-graft-bs12 TREE_BS=12 bash paper_figures/run_2xh200.sh $O/bs12 $LEFT \
    "4 --systems swiftspec --split 1+1 --kernels fused" "4 --systems tree --tp 2 --kernels fused" > $O/bs12.log 2>&1
grep -E "^==|skipped" $O/bs12.log
for r in bs8 bs12; do
  python3 -m swiftspec_bench.cli compare $O/$r --format markdown > $O/$r/compare.md 2>&1
  grep -E "overall" $O/$r/compare.md | cut -d'|' -f2-17
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/$r > $O/$r/checks.md 2>&1; cat $O/$r/checks.md
done
rm -rf $O/replay-bs8
cd $OUT && tar czf all.tgz c1
