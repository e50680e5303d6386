#!/usr/bin/env bash
# Session 34, call 4 (NOTES v214), nvidia-h200, no carry, ran at 73da00c (since moved beside this
# script: awq_fold_ab.py): paper_figures/awq_fold_ab.py, the two
# folds of the fp16-operand kernels (c2's and this tree's) and a mix, fp16 x, M = 8, 3 rounds.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm,serial --format=csv; } > $O/env.log
PYTHONPATH=. timeout -k 5 240 python3 paper_figures/awq_fold_ab.py --rounds 3 > $O/ab.log 2>&1
echo "ab: exit $? ($(( $(date +%s) - START )) s)"; cat $O/ab.log | tail -8
cd $OUT && tar czf c4.tgz c4
