#!/usr/bin/env bash
# Session 46, call 1 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session46/command-1.sh
# (NOTES v258): carveout_probe.py, the AWQ GEMMs at forced shared-memory configurations, and the
# 70B down at 80 against 96 registers.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 400 python3 paper_figures/results/2026-12-04-h200-session46/carveout_probe.py > $O/carveout.md 2> $O/carveout.log
echo "carveout: exit $? ($(( $(date +%s) - START )) s)"; cat $O/carveout.md; tail -3 $O/carveout.log
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
