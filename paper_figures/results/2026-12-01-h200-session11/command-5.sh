#!/usr/bin/env bash
# Eleventh session, call 5 (nvidia-h200): call 1's attention kernel again (the pair and quad
# designs reverted, NOTES v50); attention_trace.py with stamps in thread 0's item and in its merge
# (8B, 1B; M = 1, 8), and the attention tests.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
for m in 8 1; do
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --m $m > $O/trace-m$m.md 2> $O/trace-m$m.log
  echo "trace M = $m exit $? ($(( $(date +%s) - START )) s)"; tail -3 $O/trace-m$m.log | grep -v Deprecat
done
grep -B2 -A16 "^| a block" $O/trace-m8.md
cd $OUT && tar czf all.tgz c5
