#!/usr/bin/env bash
# Fifth session, call 1 (nvidia-h200-x2): the first GPU run of the previous session's CPU-side
# changes and the untimed AWQ GEMM v2. 1) GPU tests: AWQ GEMM v2, the all-reduce (epoch read by
# every thread), the runtime with the pipe link. 2) The all-reduce's launch-shape sweep. 3) Kernel
# rows: awq_gemm (70B, 8B) and allreduce. 4) profile_split (where a draft step's time goes).
# 5) swiftspec@1+1 fused e2e at call B's settings (then tree@tp2 while time is left).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/s1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py \
    tests/test_kernel_allreduce.py tests/test_runtime.py > $O/gpu-tests.log 2>&1
echo "tests exit $? ($(( $(date +%s) - START )) s)"; grep -E "passed|failed|FAILED|ERROR" $O/gpu-tests.log | tail -8
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/allreduce_sweep.py > $O/allreduce-sweep.md 2> $O/allreduce-sweep.err
echo "sweep exit $?"; cat $O/allreduce-sweep.md; tail -3 $O/allreduce-sweep.err
timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-70b,llama-3-8b --tp 1,2 --m 1,8,16 \
    --ops awq_gemm,allreduce --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $?"; grep -E "awq_gemm|allreduce" $O/kernels/kernels.md | grep -E "\| (1|8|16) \|" | head -40
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 \
    --graft ngram --kernels fused --out $O/profile > $O/profile.log 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(alone|both|request)" $O/profile/rank*.txt; tail -3 $O/profile.log
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( 560 - ($(date +%s) - START) ))
REPLAY=$O/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $O/fused $LEFT \
    "10 --systems swiftspec --split 1+1" "10 --systems tree --tp 2" > $O/fused.log 2>&1
grep -E "^==|skipped" $O/fused.log
python3 -m swiftspec_bench.cli compare $O/fused --format markdown > $O/fused/compare.md 2>&1
grep -E "overall" $O/fused/compare.md | cut -d'|' -f5-14
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz s1
