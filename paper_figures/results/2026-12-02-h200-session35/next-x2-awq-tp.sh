#!/usr/bin/env bash
# Prepared in session 35, not run: for a session lent nvidia-h200-x2. The AWQ GEMM + LL all-reduce
# (cuda/awq_gemm_allreduce.cu) checked on one shared GPU only (session35/c1); here its two-GPU
# tests with their printed timings (fused against awq_gemm then the LL all-reduce, M = 8, 70B TP2
# o / down; one weight, L2-warm) and the kernels table's awq_gemm_allreduce rows beside awq_gemm's
# at TP2 (weights copied past the L2, graphs of back-to-back calls). Issue 10's bar for the bf16
# fused GEMM + all-reduce reads "within 3 us of our GEMM alone": the AWQ rows should read the same
# way. ~3 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/x2awq; mkdir -p $O
timeout 300 python3 -m pytest -x -s -q tests/test_kernel_awq_allreduce.py tests/test_kernel_gemm_allreduce.py \
    tests/test_kernel_allreduce.py > $O/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed|M=8 TP2" $O/tests.log | head -20
timeout 240 python3 -m swiftspec_bench.cli kernels --models llama-3-70b,llama-3-8b --tp 2 --m 1,8,16 \
    --ops awq_gemm,awq_gemm_allreduce,gemm_allreduce --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $?"; grep -E "awq_gemm|gemm_allreduce" $O/kernels/kernels.md | head -30
