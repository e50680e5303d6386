#!/usr/bin/env bash
# Call 3 of the eighteenth session (nvidia-h200): the whole test suite on one GPU at main's head
# (the AWQ norm epilogues merged, 48f90b5; profile_forward's labels): every GPU test that one GPU
# runs (two-GPU tests skip), with the slowest tests' durations.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 540 python3 -m pytest -q -rfEs -p no:cacheprovider --durations=20 tests > $O/gpu-suite.log 2>&1
echo "suite: exit $? ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-suite.log | head -20
grep -E "passed|failed" $O/gpu-suite.log | tail -2
grep -E "^SKIPPED" $O/gpu-suite.log | sed -E 's/^SKIPPED \[[0-9]+\] [^:]+:[0-9]+: //' | sort | uniq -c | sort -rn | head -8
cd $OUT && tar czf all.tgz c3
