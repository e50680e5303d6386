#!/usr/bin/env bash
# For the next session with one H200 (written in the twentieth; not run; NOTES v127): where a bf16
# GEMM's ~3-4 us over its floor goes inside a forward, from forward_timeline.py's new stamps (the
# PDL wait's return, the first x's arrival, the loop's end, the combine barrier, the exit): the 8B
# at widths 8 and 12 (the verification's default), the 1B at 8 and 9 (the draft step's); then the
# attention's own phases (attention_trace.py, the append inside) at M = 8, 9 and 12: where it grows
# ~0.2 us a query past 8. ~3 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/phases; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for spec in llama-3-8b:8 llama-3-8b:12 llama-3.2-1b:8 llama-3.2-1b:9; do
  m=${spec%:*}; w=${spec#*:}
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models $m --width $w \
      --csv $O/timeline-$m-w$w.csv > $O/timeline-$m-w$w.md 2> $O/timeline-$m-w$w.log
  echo "$m width $w: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (qkv|o|gate_up|down) \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \|$" $O/timeline-$m-w$w.md
done
for m in 8 9 12; do
  PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --models llama-3-8b,llama-3.2-1b --m $m \
      > $O/trace-m$m.md 2> $O/trace-m$m.log
  echo "attention trace M = $m: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^first start" $O/trace-m$m.md
done
cd $OUT && tar czf phases.tgz phases
