#!/usr/bin/env bash
# Thirteenth session, call 4 (nvidia-h200): the landing commit (NOTES v69): lm_head's two warps a
# block; the GEMM / norm-GEMM / fused-forward / fused-decoder GPU tests, the kernel table's lm_head
# rows (M = 1, 8, 16) and forward / draft_step rows (8B, 3B, 1B, M = 8).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py tests/test_kernel_gemm_swiglu.py \
    tests/test_kernel_gemm_norm.py tests/test_fused_forward.py tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --tp 1 \
    --m 8 --ops forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --tp 1 \
    --m 1,8,16 --ops gemm --impl ours --out $O/kernels >> $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (gemm_lm_head|forward|draft_step) " $O/kernels/kernels.md | cut -c1-100
cd $OUT && tar czf all.tgz c4
