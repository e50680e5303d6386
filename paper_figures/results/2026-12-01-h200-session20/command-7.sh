#!/usr/bin/env bash
# Call 7 of the twentieth session (nvidia-h200): v126's read_csv on the GPU machine's pandas:
# test_bench_run.py from the repository root, with the pandas and Python versions. ~1 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c7; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ); $(python3 -c 'import sys, pandas; print("python", sys.version.split()[0], "pandas", pandas.__version__)')" | tee $O/env.log
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_bench_run.py tests/test_bench_units.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log)"; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
