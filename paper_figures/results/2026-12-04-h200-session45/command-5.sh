#!/usr/bin/env bash
# Session 45, call 5 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session45/command-5.sh
# (NOTES v256): same_split_probe.py, awq_gemm and stream-K on the same split.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/results/2026-12-04-h200-session45/same_split_probe.py > $O/same-split.md 2> $O/same-split.log
echo "same split: exit $? ($(( $(date +%s) - START )) s)"; cat $O/same-split.md; tail -3 $O/same-split.log
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
