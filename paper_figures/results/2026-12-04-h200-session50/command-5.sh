#!/usr/bin/env bash
# Session 50, call 5 (NOTES v280), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# attention_trace.py (thread 0's phases of every block of one tree_attention call, standalone, the
# output checked bitwise against the runtime kernel's) at the 70B's and the 8B's shapes, M = 8,
# context 1000, the append inside as the forward runs it; the 70B also without it.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c5; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b --m 8 --context 1000 \
    > $O/trace.md 2> $O/trace.log
echo "trace: exit $? ($(( $(date +%s) - START )) s)"; cat $O/trace.md
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/attention_trace.py --models llama-3-70b --m 8 --context 1000 --no-append \
    > $O/trace-no-append.md 2> $O/trace-no-append.log
echo "trace no append: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (items done|merge|ticket)|first start" $O/trace-no-append.md
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
