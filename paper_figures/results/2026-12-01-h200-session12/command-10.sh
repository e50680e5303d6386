#!/usr/bin/env bash
# Twelfth session, call 10 (nvidia-h200), branch qkv-append: the cache append in the qkv GEMM's
# epilogue (NOTES v64): its GPU tests, the fused forward / decoder and attention tests, the kernel
# table's forward / draft_step rows (8B, 3B, 1B).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c10; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm_qkv.py tests/test_gpu_fused.py \
    tests/test_fused_forward.py tests/test_kernel_attention.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf all.tgz c10
