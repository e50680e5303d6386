#!/usr/bin/env bash
# Call 6 of the seventeenth session (nvidia-h200; NOTES v108): the landing commit of plan()'s
# PDL_PREFERENCE (the 70B TP 1 AWQ qkv at (11, 1) under PDL): every AWQ GPU test, the 70B AWQ forward.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_plan.py \
    > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py --models llama-3-70b --quant awq --csv $O/profile.csv \
    > $O/profile.md 2> $O/profile.log
echo "profile exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile.md)"
cd $OUT && tar czf all.tgz c6
