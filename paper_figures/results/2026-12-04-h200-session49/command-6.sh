#!/usr/bin/env bash
# Session 49, call 6 (NOTES v275), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# gate_up's launch shape inside the 70B AWQ forward: plan()'s (3, 1) against (2, 1) and (1, 2).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c6; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 200 python3 paper_figures/plan_in_forward.py --op gate_up --shapes 3x1,2x1,1x2 \
    > $O/gate_up.md 2> $O/gate_up.log
echo "gate_up: exit $? ($(( $(date +%s) - START )) s)"; cat $O/gate_up.md; tail -3 $O/gate_up.log
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
