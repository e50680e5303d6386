#!/usr/bin/env bash
# Session 39, call 1 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session39/command-1.sh
# (NOTES v231: ff4d69b's norm_x_unit and everything since on the GPU). The GPU tests at this commit: tests/test_gpu.py (its log becomes
# paper_figures/results/gpu-tests-<commit>.log), then the AWQ kernels' and engine's tests with the
# fp16 next-x unit (awq_norms.NextNorm.unit, Transformer.norm_x_unit) and the AWQ twin.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT: python3 -m pytest -q -x tests/test_gpu.py"
  time timeout -k 5 200 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py; } > $O/gpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
echo "test_gpu.py: $(grep -E 'passed|failed' $O/gpu-tests-$SWIFTSPEC_COMMIT.log | tail -1) ($(( $(date +%s) - START )) s)"
timeout -k 5 280 python3 -m pytest -q -rfE -s -p no:cacheprovider tests/test_awq_norms.py tests/test_kernel_awq_gemm.py \
    tests/test_random_awq.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)|relative error" $O/awq-tests.log | head -12
cd "$OUT" && tar czf c1.tgz c1 && rm -rf c1
