#!/usr/bin/env bash
# Session 34, call 6, ran at 942ed9c as `SWIFTSPEC_COMMIT=942ed9c bash command-6.sh` (NOTES v216), nvidia-h200, no carry: the kernels table's 70B AWQ rows (TP 1,
# M = 1, 8, 16) on the x dtype the one-GPU engine feeds each projection.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
timeout -k 5 200 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 1,8,16 --ops awq_gemm \
    --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| awq" $O/kernels/kernels.md; cut -d, -f1,4,6,7,9,12 $O/kernels/kernels.csv
cd $OUT && tar czf c6.tgz c6
