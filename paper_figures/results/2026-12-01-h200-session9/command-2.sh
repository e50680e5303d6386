#!/usr/bin/env bash
# Ninth session, call 2 (nvidia-h200): balanced launches and x further ahead (NOTES v38).
# 1) GPU tests: the AWQ GEMM's (the occupancy of balanced launches included), the bf16 GEMM's and
#    GEMM + SwiGLU's (their launches now balanced too).
# 2) awq_gemm_ab.py, balanced: v4 / v5 / v5-x2 / v5-x3 / v5-xr, 70B and 8B, M = 1, 8, 16.
# 3) the same, SWIFTSPEC_BALANCE=0, v4 and v5 on the 70B at M = 8.
# 4) swiftspec-bench kernels (ours, 8B, TP 1, M = 8: gemm and the forward), balance on and off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-awq.log | head -5
PYTHONPATH=. timeout -k 5 200 python3 paper_figures/awq_gemm_ab.py --models llama-3-70b,llama-3-8b --m 1,8,16 \
    > $O/awq-ab.md 2> $O/awq-ab.log
echo "awq ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/awq-ab.md; tail -3 $O/awq-ab.log
SWIFTSPEC_BALANCE=0 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/awq_gemm_ab.py --models llama-3-70b --m 8 \
    --builds v4,v5 > $O/awq-ab-unbalanced.md 2> $O/awq-ab-unbalanced.log
echo "awq ab unbalanced exit $? ($(( $(date +%s) - START )) s)"; cat $O/awq-ab-unbalanced.md; tail -3 $O/awq-ab-unbalanced.log
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py tests/test_kernel_gemm_swiglu.py \
    > $O/gpu-tests-gemm.log 2>&1
echo "gemm tests: exit $? $(tail -1 $O/gpu-tests-gemm.log) ($(( $(date +%s) - START )) s)"
for b in 1 0; do
  SWIFTSPEC_BALANCE=$b timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8 \
      --ops gemm,forward --impl ours --out $O/kernels-balance$b > $O/kernels-balance$b.log 2>&1
  echo "kernels balance=$b exit $? ($(( $(date +%s) - START )) s)"; cat $O/kernels-balance$b/kernels.md 2>/dev/null | head -20
done
cd $OUT && tar czf all.tgz c2
