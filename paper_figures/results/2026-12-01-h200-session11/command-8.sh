#!/usr/bin/env bash
# Eleventh session, call 8 (nvidia-h200): attention ldmatrix over the rows by position (NOTES v53).
# 1) the attention, norm and fused-decoder GPU tests; 2) attention_trace.py (8B, 1B, M = 8, 1);
# 3) the kernel table's attention rows (M = 1, 8, 16) and forward / draft_step rows (M = 8);
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
R=paper_figures/results/2026-12-01-h200-session11
O=$OUT/c8; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_kernel_norm.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
for m in 8 1; do
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --m $m > $O/trace-m$m.md 2> $O/trace-m$m.log
  echo "trace M = $m exit $? ($(( $(date +%s) - START )) s)"; tail -3 $O/trace-m$m.log | grep -v Deprecat
done
grep -A16 "^| a block" $O/trace-m8.md
timeout -k 5 200 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 1,8,16 \
    --ops attention --impl ours --out $O/kernels > $O/kernels.log 2>&1
timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels >> $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (attention|forward|draft_step) " $O/kernels/kernels.md
cd $OUT && find c8 -size +12M -delete; tar czf all.tgz c8
