#!/usr/bin/env bash
# Session 50, call 3 (NOTES v278), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# Every one-wave launch shape of the AWQ GEMM on the 70B layer shapes at M = 8, timed standalone
# (paper_figures/plan_sweep.py; last run in session 13, on a kernel since changed many times).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c3; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for op in o qkv down gate_up; do
  [ $(( $(date +%s) - START )) -lt 420 ] || break
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/plan_sweep.py --models llama-3-70b --ops $op --m 8 \
      --top 6 --csv $O/sweep-$op.csv > $O/sweep-$op.md 2> $O/sweep-$op.log
  echo "sweep $op: exit $? ($(( $(date +%s) - START )) s)"; grep -E "plan \(|^\| llama" $O/sweep-$op.md | tail -8
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
