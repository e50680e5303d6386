#!/usr/bin/env bash
# Session 43, call 4 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session43/command-4.sh
# (NOTES v244). awq_phases.py twice: the AWQ GEMM's blocks split at their stamps on the 70B o, qkv
# and down at M = 8, back to back.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for run in a b; do
  PYTHONPATH=. timeout -k 5 200 python3 paper_figures/awq_phases.py --out $O/phases-$run > $O/phases-$run.log 2>&1
  echo "phases $run: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\|" $O/phases-$run.log; grep -E "Error|error" $O/phases-$run.log | tail -3
done
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
