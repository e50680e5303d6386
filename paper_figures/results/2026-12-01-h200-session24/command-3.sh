#!/usr/bin/env bash
# Call 3 of the twenty-fourth session (nvidia-h200; NOTES v144): which side of the 1B's o -> gate_up
# boundary is slow. edge_pairs.py (real o / gate_up / down at the 1B's shapes against edge_probe's
# producer and consumer, one side swapped at a time), then the 1B's forward timeline at width 9 on
# the same machine for reference.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 180 python3 paper_figures/edge_pairs.py > $O/pairs.md 2> $O/pairs.log
echo "pairs exit $? ($(( $(date +%s) - START )) s)"; cat $O/pairs.md; tail -3 $O/pairs.log
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    > $O/timeline-llama-3.2-1b-w9.md 2> $O/timeline-llama-3.2-1b-w9.log
echo "timeline exit $? ($(( $(date +%s) - START )) s)"
grep -A6 "^| place | reach" $O/timeline-llama-3.2-1b-w9.md
cd $OUT && tar czf c3.tgz c3
