#!/usr/bin/env bash
# Session 43, call 3 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session43/command-3.sh
# (NOTES v243). awq_fixed_cost.py on main's kernels: the AWQ GEMM's time at the o and qkv shapes as
# a fixed cost plus a cost a group a warp, with and without the weight copies, twice.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for run in a b; do
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_fixed_cost.py --out $O/fixed-$run > $O/fixed-$run.log 2>&1
  echo "fixed cost $run: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\|" $O/fixed-$run.log; grep Error $O/fixed-$run.log | tail -2
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
