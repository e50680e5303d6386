#!/usr/bin/env bash
# Session 30, call 5: why the persistent draft, faster alone (step_host: 979 against 1024 us a
# step), runs slower in the decode with the fused target slower too (c1: +2-3% target ms a round).
# Hypothesis: its 132 blocks spinning at grid barriers draw power and the GPU clocks down. One H200,
# main (v193 reverted), carry .data: tree, qa + gsm8k x 3, throwaway, then F P P F, each run with
# nvidia-smi sampling the SM clock, power and temperature every 100 ms (clocks.csv per run).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$FIELDS --format=csv,noheader,nounits > /dev/null 2>&1 || FIELDS=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu
echo "fields $FIELDS" >> $O/env.log
for run in t:fused f1:fused p1:persistent p2:persistent f2:fused; do
  name=${run%%:*}; k=${run#*:}
  nvidia-smi --query-gpu=$FIELDS --format=csv,noheader,nounits -lms 100 > $O/clocks-$name.csv 2>&1 &
  SMI=$!
  limit=3; [ $name = t ] && limit=1
  python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda \
      --dtype bfloat16 --systems tree --kernels $k --acceptance replay:$R --datasets qa,gsm8k --limit $limit \
      --max-new-tokens 256 --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --out $O/e2e-$name > $O/e2e-$name.log 2>&1
  kill $SMI
  python3 - $O/clocks-$name.csv $name <<'PY'
import sys, statistics
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") >= 4]
busy = [r for r in rows if float(r[3]) > 150]  # samples while the GPU works (power above idle)
sm = [float(r[1]) for r in busy]; pw = [float(r[3]) for r in busy]; tc = [float(r[4]) for r in busy]
reasons = sorted({r[5] for r in busy}) if busy and len(busy[0]) > 5 else []
print(f"{sys.argv[2]}: {len(busy)} busy samples of {len(rows)}; SM MHz median {statistics.median(sm) if sm else 0:.0f} "
      f"min {min(sm) if sm else 0:.0f}; power W median {statistics.median(pw) if pw else 0:.0f} max {max(pw) if pw else 0:.0f}; "
      f"temp C max {max(tc) if tc else 0:.0f}; reasons {reasons[:4]}")
PY
  python3 -m swiftspec_bench.cli compare $O/e2e-$name --format markdown 2>/dev/null | grep -E "\| overall " | awk -F'|' '{print "   tok/s", $7, "round", $14, "target", $15, "draft", $16}'
  echo "  ($(( $(date +%s) - START )) s)"
done
find $O -name results.parquet -delete
cd $OUT && tar czf c5.tgz c5
