#!/usr/bin/env bash
# Session 26, call 13 (NOTES v172), one H200, branch merge-one-trip: where the persistent layer's
# time goes with the merge's loads in one round trip (every chunk's outputs loaded beside the
# maxima), M = 8, contexts 1000 and 2000. ~1 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c13; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run layer-ctx1000 --attention --rows 8 --timeline
run layer-ctx2000 --attention --rows 8 --context 2000 --timeline
cd $OUT && tar czf c13.tgz c13
