#!/usr/bin/env bash
# Call 2 of the twenty-third session (NOTES v137): where a GEMM block's release goes. forward_timeline.py
# now stamps a GEMM block on reaching its PDL wait as well as on leaving it (phases reach / in wait);
# the 1B at widths 9 and 8 and the 8B at width 8, main as committed, with one layer's blocks. ~3 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for mw in llama-3.2-1b:9 llama-3.2-1b:8 llama-3-8b:8; do
  m=${mw%:*}; w=${mw#*:}
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models $m --width $w \
      --csv $O/timeline-$m-w$w.csv --blocks $O/blocks-$m-w$w.csv > $O/timeline-$m-w$w.md 2> $O/timeline-$m-w$w.log
  echo "timeline $m w$w: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (place|norm \(attention\)|qkv|attention|o|norm \(mlp\)|gate_up|down) \|" $O/timeline-$m-w$w.md
done
cd $OUT && tar czf c2.tgz c2
