#!/usr/bin/env bash
# Call 12 of the twenty-fifth session (nvidia-h200): persistent_mlp.py (NOTES v158): the last commit's probe, a second
# sample of c11 (block and MLP at M = 8).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c12; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 200 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run block-m8 --block --rows 8
run mlp-m8 --rows 8
cd $OUT && tar czf c12.tgz c12
