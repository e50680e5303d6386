#!/usr/bin/env bash
# Session 46, call 6 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session46/command-6.sh
# (NOTES v263): align_probe.py, awq_gemm and the stream-K kernel with their dynamic shared memory
# aligned to 128 bytes. The stream-K patch is applied to the device's copy of the tree only.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
patch -p1 -s < paper_figures/results/2026-12-04-h200-session45/streamk.patch || { echo "error: the patch did not apply"; exit 2; }
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + session45/streamk.patch, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 420 python3 paper_figures/results/2026-12-04-h200-session46/align_probe.py > $O/align.md 2> $O/align.log
echo "align: exit $? ($(( $(date +%s) - START )) s)"; cat $O/align.md; tail -3 $O/align.log
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
