#!/usr/bin/env bash
# Call 5 of the twenty-third session (NOTES v140): a launch's last thread's exit against thread 0's
# (forward_timeline.py's new exit lag column), the 1B at width 9 and the 8B at width 8, main as
# committed. ~2 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for mw in llama-3.2-1b:9 llama-3-8b:8; do
  m=${mw%:*}; w=${mw#*:}
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models $m --width $w \
      --csv $O/timeline-$m-w$w.csv > $O/timeline-$m-w$w.md 2> $O/timeline-$m-w$w.log
  echo "timeline $m w$w: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (place|norm \(attention\)|qkv|attention|o|norm \(mlp\)|gate_up|down|lm_head) \|" $O/timeline-$m-w$w.md
done
