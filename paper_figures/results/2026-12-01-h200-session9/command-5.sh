#!/usr/bin/env bash
# Written in the ninth session, not run (its device time was spent): the next session's first call
# (nvidia-h200-x2), NOTES v41.
# 1) GPU 1: the AWQ GEMM's tests with plan()'s fitted score; then plan_sweep.py on the bf16 GEMM
#    (8B and 1B at TP 1, M = 8) for issue 10's 8B verification (1.34x its floor) and 1B draft step.
#    GPU 0 meanwhile: the AWQ sweep at M = 1 and 16 on 70B TP 1 (plan() was fitted at M = 8).
# 2) Both GPUs: issue 11's pair (70B AWQ / 3B, fused, bs 8, grafting, replayed) with the new plan().
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
( export CUDA_VISIBLE_DEVICES=1
  timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq.log 2>&1
  echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
  PYTHONPATH=. timeout -k 5 170 python3 paper_figures/plan_sweep.py --kernel gemm --models llama-3-8b,llama-3.2-1b \
      --ops qkv,o,gate_up,down --csv $O/sweep-gemm.csv > $O/sweep-gemm.md 2> $O/sweep-gemm.log
  echo "gemm sweep exit $? ($(( $(date +%s) - START )) s)"; tail -12 $O/sweep-gemm.md ) > $O/gpu1.log 2>&1 &
for m in 1 16; do
  CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/plan_sweep.py --models llama-3-70b --m $m \
      --top 3 --csv $O/sweep-awq-m$m.csv > $O/sweep-awq-m$m.md 2> $O/sweep-awq-m$m.log
  echo "awq sweep M = $m exit $? ($(( $(date +%s) - START )) s)"; tail -6 $O/sweep-awq-m$m.md
done
wait; cat $O/gpu1.log
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py /tmp/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( 560 - ($(date +%s) - START) ))
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq --kernels fused" REPLAY=/tmp/replay-source TREE_BS=8 \
    bash paper_figures/run_2xh200.sh $O/run $LEFT "10 --systems swiftspec --split 1+1" \
    "10 --systems tree --tp 2" "2 --systems ar" > $O/run.log 2>&1
python3 -m swiftspec_bench.cli compare $O/run --format markdown > $O/run/compare.md 2>&1
grep -E "overall" $O/run/compare.md | cut -d'|' -f2-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/run > $O/run/checks.md 2>&1; head -12 $O/run/checks.md
cd $OUT && tar czf all.tgz c5
