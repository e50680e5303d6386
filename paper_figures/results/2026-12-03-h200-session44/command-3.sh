#!/usr/bin/env bash
# Session 44, call 3 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session44/command-3.sh
# (NOTES v250). At main after the in-place combine: 1. the kernel table's AWQ rows (70B, TP1, M = 1,
# 8, 16). 2. awq_phases.py (where the AWQ GEMM's fixed cost goes). 3. The GPU tests (test_gpu.py)
# and the replay / settings tests under the device's versions.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 1,8,16 \
    --ops awq_gemm --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "ours:" $O/kernels.log
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_phases.py --out $O/phases > $O/phases.log 2>&1
echo "phases: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\|" $O/phases.log; grep -E "Error|error" $O/phases.log | tail -3
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT"
  time timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_bench_replay_audit.py \
      tests/test_bench_settings.py; } > $O/gpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
echo "gpu tests: $(grep -E "passed|failed" $O/gpu-tests-$SWIFTSPEC_COMMIT.log | tail -1) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-$SWIFTSPEC_COMMIT.log | head -8
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
