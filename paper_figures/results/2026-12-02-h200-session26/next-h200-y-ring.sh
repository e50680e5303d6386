#!/usr/bin/env bash
# Prepared at the end of session 26 (NOTES v174), not run: on branch y-ring (check it out first;
# it holds merge-spread's change too), one H200. The persistent layer with down's y streamed
# through 3 slots (shared memory 231 -> 206 KB), M = 8, contexts 1000 and 2000 with the attention,
# and --qkv, with the timeline. ~1.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/n2; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run layer-ctx1000 --attention --rows 8 --timeline
run layer-ctx2000 --attention --rows 8 --context 2000 --timeline
run qkv --qkv --rows 8 --timeline
cd $OUT && tar czf n2.tgz n2
