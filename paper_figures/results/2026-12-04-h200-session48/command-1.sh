#!/usr/bin/env bash
# Session 48, call 1 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session48/command-1.sh
# (NOTES v267): the GPU tests at this commit. tests/test_gpu.py (its log becomes
# paper_figures/results/gpu-tests-<commit>.log), then every other test file on the one GPU (the
# two-GPU tests skip), with the slowest tests listed.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT: python3 -m pytest -q -x tests/test_gpu.py"
  time timeout -k 5 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py; } > $O/gpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
echo "test_gpu.py: $(grep -E 'passed|failed' $O/gpu-tests-$SWIFTSPEC_COMMIT.log | tail -1) ($(( $(date +%s) - START )) s)"
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT: python3 -m pytest -q -rfE --durations=25 tests --ignore=tests/test_gpu.py"
  timeout -k 5 $(( 560 - ($(date +%s) - START) )) python3 -m pytest -q -rfE --durations=25 -p no:cacheprovider tests \
      --ignore=tests/test_gpu.py; echo "exit $?"; } > $O/all-tests.log 2>&1
echo "all other tests: $(grep -E 'passed|failed' $O/all-tests.log | tail -1) $(tail -1 $O/all-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/all-tests.log | head -12
cd "$OUT" && tar czf c1.tgz c1 && rm -rf c1
