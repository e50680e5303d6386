#!/usr/bin/env bash
# Session 50, call 4 (NOTES v279), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# call 3's faster standalone shapes of qkv and down, timed inside the 70B AWQ forward (plan_in_forward.py).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c4; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for spec in "qkv 11x1,8x2,4x4,12x1" "down 19x1,23x1,24x1,22x1"; do
  set -- $spec
  [ $(( $(date +%s) - START )) -lt 400 ] || break
  PYTHONPATH=. timeout -k 5 200 python3 paper_figures/plan_in_forward.py --op $1 --shapes $2 --rounds 3 > $O/$1.md 2> $O/$1.log
  echo "$1: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| [0-9]" $O/$1.md
done
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
