#!/usr/bin/env bash
# Session 51, call 1 (NOTES v284, v285), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# 1. attention_trace.py, 70B and 8B, M = 8, context 1000: L2 emptied (cold), cold then the code
#    fetched by a decoy call (code-warm), warm. 2. evict-first.patch A/B (paper_figures/awq_ab.sh).
#    3. The patched forward's timeline, layer 2 (its blocks: the attention's mergers).
set -u
source paper_figures/device_env.sh
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-04-h200-session51
O=$OUT/c1; mkdir -p $O; START=$(date +%s)
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
for state in cold code-warm warm; do
  flags=""; [ $state = cold ] && flags=--cold; [ $state = code-warm ] && flags="--cold --code-warm"
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b $flags \
      > $O/trace-$state.md 2> $O/trace-$state.log
  echo "trace $state: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^llama|^\| (merge start -> merge max|merge max -> merge summed|values -> items done)|^first" $O/trace-$state.md
done
bash paper_figures/awq_ab.sh $O $HERE/evict-first.patch
if [ $(( $(date +%s) - START )) -lt 490 ]; then  # the working tree is the patched one now
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models llama-3-70b --quant awq \
      --csv $O/timeline-l2.csv --blocks $O/blocks-l2.csv --layer 2 > $O/timeline-l2.md 2> $O/timeline-l2.log
  echo "timeline layer 2 (new): exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (qkv|o|gate_up|down|attention|place) " $O/timeline-l2.md | head -12
fi
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
