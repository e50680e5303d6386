#!/usr/bin/env bash
# Ninth session, call 3 (nvidia-h200): every launch shape of the AWQ GEMM (NOTES v39).
# 1) tests/test_kernel_awq_gemm.py (the final launch rules: clusters without PDL).
# 2) awq_gemm_ab.py, v4 / v5, 70B and 8B, M = 8.
# 3) awq_plan_sweep.py, 70B and 8B, M = 8: every one-wave shape; then 70B again under SWIFTSPEC_PDL=0.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/awq_gemm_ab.py --m 8 > $O/awq-ab.md 2> $O/awq-ab.log
echo "awq ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/awq-ab.md; tail -3 $O/awq-ab.log
PYTHONPATH=. timeout -k 5 200 python3 paper_figures/awq_plan_sweep.py > $O/sweep.md 2> $O/sweep.log
echo "sweep exit $? ($(( $(date +%s) - START )) s)"; cat $O/sweep.md; tail -3 $O/sweep.log
SWIFTSPEC_PDL=0 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/awq_plan_sweep.py --models llama-3-70b \
    > $O/sweep-nopdl.md 2> $O/sweep-nopdl.log
echo "sweep no PDL exit $? ($(( $(date +%s) - START )) s)"; tail -8 $O/sweep-nopdl.md; tail -3 $O/sweep-nopdl.log
cd $OUT && tar czf all.tgz c3
