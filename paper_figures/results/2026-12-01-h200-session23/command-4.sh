#!/usr/bin/env bash
# Call 4 of the twenty-third session (NOTES "The kernels' GPU tests at one commit"): every test file
# of the kernels and the fused engines on one H200 at main as committed (the AWQ ones last ran on a
# GPU in the twentieth session), with the slowest tests listed for future splits. ~6-8 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
FILES="tests/test_kernel_gemm.py tests/test_kernel_gemm_norm.py tests/test_kernel_gemm_swiglu.py tests/test_kernel_norm.py
  tests/test_kernel_topk.py tests/test_kernel_attention.py tests/test_kernel_awq_gemm.py tests/test_kernel_awq_dequantize.py
  tests/test_awq_norms.py tests/test_random_awq.py tests/test_fused_forward.py tests/test_gpu_fused.py tests/test_gpu.py
  tests/test_cuda_compile.py tests/test_kernel_allreduce.py tests/test_kernel_gemm_allreduce.py"
timeout -k 10 560 python3 -m pytest -q -rfEs -p no:cacheprovider --durations=12 $FILES > $O/gpu-tests.log 2>&1
echo "tests: exit $? ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -12
grep -E "passed|failed" $O/gpu-tests.log | tail -2
grep -E "^SKIPPED" $O/gpu-tests.log | cut -c1-150 | sort | uniq -c | sort -rn | head -6
cd $OUT && tar czf c4.tgz c4
