#!/usr/bin/env bash
# Session 50, call 6 (NOTES v281), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# attention_trace.py with the L2 cache emptied before the traced call (--cold), 70B and 8B shapes,
# M = 8, context 1000, the append inside; then the 70B warm again beside it (the same call's clock).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c6; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b --cold \
    > $O/trace-cold.md 2> $O/trace-cold.log
echo "trace cold: exit $? ($(( $(date +%s) - START )) s)"; cat $O/trace-cold.md
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/attention_trace.py --models llama-3-70b > $O/trace-warm.md 2> $O/trace-warm.log
echo "trace warm: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (staged|items done|ticket|merge)|first start" $O/trace-warm.md
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
