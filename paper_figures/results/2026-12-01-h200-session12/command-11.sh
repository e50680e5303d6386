#!/usr/bin/env bash
# Twelfth session, call 11 (nvidia-h200), branch merge-halves: the attention's merge shared by the
# last two blocks of a group (NOTES v65): attention and fused-decoder GPU tests, attention_trace.py
# (8B, M = 8), the kernel table's attention rows and forward / draft_step rows (8B, 1B).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c11; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --m 8 --models llama-3-8b > $O/trace-m8.md 2> $O/trace-m8.log
echo "trace exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(llama|first|\| (merge|ticket))" $O/trace-m8.md
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 1,8,16 \
    --ops attention --impl ours --out $O/kernels > $O/kernels.log 2>&1
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels >> $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (attention|forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf all.tgz c11 && rm -rf c11
