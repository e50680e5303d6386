#!/usr/bin/env bash
# Prepared for the next session (NOTES v283), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# attention_trace.py with the merge split at its max (the stamp "merge max": every load of the batch
# issued, the chunks' (max, sum) landed), 70B and 8B, M = 8, context 1000: L2 emptied first, then warm.
set -u
source paper_figures/device_env.sh
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/merge; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for state in cold warm; do
  flag=""; [ $state = cold ] && flag=--cold
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b $flag \
      > $O/trace-$state.md 2> $O/trace-$state.log
  echo "trace $state: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^llama|^\| (merge start -> merge max|merge max -> merge summed|values -> items done)|^first" $O/trace-$state.md
done
cd $OUT && tar czf merge.tgz merge && rm -rf merge
