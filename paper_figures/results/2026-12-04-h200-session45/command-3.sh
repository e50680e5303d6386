#!/usr/bin/env bash
# Session 45, call 3 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session45/command-3.sh
# (NOTES v254). The stream-K loop without divisions: 1. its GPU tests. 2. streamk_warps.py: plan()
# against stream-K at 20 and 24 warps a block on the 70B's shapes, M = 8.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/results/2026-12-04-h200-session45/streamk_warps.py > $O/warps.md 2> $O/warps.log
echo "warps: exit $? ($(( $(date +%s) - START )) s)"; cat $O/warps.md; tail -3 $O/warps.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_streamk.py > $O/streamk-tests.log 2>&1
echo "stream-K tests: exit $? $(tail -1 $O/streamk-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/streamk-tests.log | head -8
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
