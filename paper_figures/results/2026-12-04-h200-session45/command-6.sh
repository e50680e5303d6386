#!/usr/bin/env bash
# Session 45, call 6 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session45/command-6.sh
# (NOTES v257): bounds_probe.py, awq_gemm and stream-K at 80 and 96 registers.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/results/2026-12-04-h200-session45/bounds_probe.py > $O/bounds.md 2> $O/bounds.log
echo "bounds: exit $? ($(( $(date +%s) - START )) s)"; cat $O/bounds.md; tail -3 $O/bounds.log
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
