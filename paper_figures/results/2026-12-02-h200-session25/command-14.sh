#!/usr/bin/env bash
# Call 14 of the twenty-fifth session (nvidia-h200): persistent_mlp.py (NOTES v160): qkv (on its RMSNorm) as the
# first phase (--qkv), and o + block and the block again after gate_up's phase became items_phase.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c14; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 200 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run qkv-m8 --qkv --rows 8
run o-m8 --o-proj --rows 8
run block-m8 --block --rows 8
cd $OUT && tar czf c14.tgz c14
