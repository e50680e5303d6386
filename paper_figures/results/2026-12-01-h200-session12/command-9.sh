#!/usr/bin/env bash
# Twelfth session, call 9 (nvidia-h200): the landing commit after the review (the merge in
# attention_merge.cuh, attention_trace.py's timer declaration first; NOTES v63): the GEMM-norm,
# attention and fused-forward / decoder GPU tests, attention_trace.py (M = 8), the kernel table's
# attention rows (M = 8) and forward / draft_step rows (8B, 1B).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c9; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm_norm.py tests/test_kernel_attention.py \
    tests/test_gpu_fused.py tests/test_fused_forward.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --m 8 --models llama-3-8b > $O/trace-m8.md 2> $O/trace-m8.log
echo "trace exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(llama|first)" $O/trace-m8.md
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops attention,forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (attention|forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf all.tgz c9
