#!/usr/bin/env bash
# Session 45, call 4 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session45/command-4.sh
# (NOTES v255): contiguous_probe.py, awq_gemm with strided against contiguous groups a warp.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/results/2026-12-04-h200-session45/contiguous_probe.py > $O/contiguous.md 2> $O/contiguous.log
echo "contiguous: exit $? ($(( $(date +%s) - START )) s)"; cat $O/contiguous.md; tail -3 $O/contiguous.log
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
