#!/usr/bin/env bash
# Prepared at the end of session 26 (NOTES v175), not run: on branch rows16 (check it out first;
# it holds merge-spread's and y-ring's changes too), one H200. The persistent GEMM phases (--qkv)
# at M = 8 (rings 1024x3 and 512x5), 9 and 16 (512x5: 1024x3 does not fit there), and the layer
# with the attention at M = 8 as the regression. ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/n3; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run layer-m8 --attention --rows 8
run qkv-m8 --qkv --rows 8 --rings 1024x3,512x5
run qkv-m9 --qkv --rows 9 --rings 512x5 --timeline
run qkv-m16 --qkv --rows 16 --rings 512x5 --timeline
cd $OUT && tar czf n3.tgz n3
