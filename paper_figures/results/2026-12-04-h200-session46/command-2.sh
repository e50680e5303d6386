#!/usr/bin/env bash
# Session 46, call 2 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session46/command-2.sh
# (NOTES v259): dispatch_probe.py, the next kernel's blocks after blocks of 8 to 200 KB of
# shared memory.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 200 python3 paper_figures/results/2026-12-04-h200-session46/dispatch_probe.py > $O/dispatch.md 2> $O/dispatch.log
echo "dispatch: exit $? ($(( $(date +%s) - START )) s)"; cat $O/dispatch.md; tail -3 $O/dispatch.log
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
