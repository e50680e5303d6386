#!/usr/bin/env bash
# Session 46, call 8 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session46/command-8.sh
# (NOTES v265): epilogue_probe.py, the AWQ GEMM's epilogue by stamps.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c8; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 200 python3 paper_figures/results/2026-12-04-h200-session46/epilogue_probe.py > $O/epilogue.md 2> $O/epilogue.log
echo "epilogue: exit $? ($(( $(date +%s) - START )) s)"; cat $O/epilogue.md; tail -3 $O/epilogue.log
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
