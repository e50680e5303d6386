#!/usr/bin/env bash
# Session 26, call 7 (NOTES v166), one H200, branch persistent-attn: where the persistent layer's
# time goes, deep and shallow, with the row-copy mode gone and the issue loop not unrolled (the
# kernel's code 264 KB -> 111 KB, the deep path's instructions as c4's: is instruction fetch the
# phases' fixed cost?), M = 8, contexts 1000 and 2000, and --qkv. ~1.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c7; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run layer-ctx1000 --attention --rows 8 --timeline
run layer-ctx2000 --attention --rows 8 --context 2000 --timeline
run qkv --qkv --rows 8 --timeline
cd $OUT && tar czf c7.tgz c7
