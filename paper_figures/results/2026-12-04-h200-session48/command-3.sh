#!/usr/bin/env bash
# Session 48, call 3 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session48/command-3.sh
# (NOTES v269): call 1's failure again, in the same process state: the test files call 1 ran before
# it (tests/test_a*, test_bench_*, test_checkpoint_*), one pytest, stopping at the first failure (-x)
# with its text, each test's name printed as it ends (-v) so a time-out still names the last.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
timeout -k 5 ${LIMIT_S:-470} python3 -m pytest -v -x -rfE --tb=long --durations=15 -p no:cacheprovider tests/test_a*.py \
    tests/test_bench_*.py tests/test_checkpoint_checks.py tests/test_checkpoint_parts.py > $O/first-files.log 2>&1
echo "exit $? $(grep -cE ' PASSED| SKIPPED' $O/first-files.log) ended; $(grep -E '(passed|failed)' $O/first-files.log | tail -1) ($(( $(date +%s) - START )) s)"
grep -E " FAILED|^(FAILED|ERROR)" $O/first-files.log | head -5; tail -2 $O/first-files.log | cut -c1-200
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
