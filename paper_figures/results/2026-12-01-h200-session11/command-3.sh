#!/usr/bin/env bash
# Eleventh session, call 3 (nvidia-h200): where an item's time goes (NOTES v50): attention_trace.py
# with stamps at the steps of thread 0's item, 8B and 1B, M = 1, 8, 16, context 1000.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for m in 8 1 16; do
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --m $m > $O/trace-m$m.md 2> $O/trace-m$m.log
  echo "trace M = $m exit $? ($(( $(date +%s) - START )) s)"; tail -3 $O/trace-m$m.log | grep -v Deprecat
done
cat $O/trace-m8.md
cd $OUT && tar czf all.tgz c3
