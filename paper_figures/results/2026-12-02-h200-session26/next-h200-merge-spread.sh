#!/usr/bin/env bash
# Prepared at the end of session 26 (NOTES v173), not run: on branch merge-spread (check it out
# first), one H200. The persistent layer with phase R's rows spread over every block (at most two
# warps a block) and 16 chunks' loads where chunks <= 16, M = 8, contexts 1000 and 2000, with
# the timeline. ~1 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/n1; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run layer-ctx1000 --attention --rows 8 --timeline
run layer-ctx2000 --attention --rows 8 --context 2000 --timeline
cd $OUT && tar czf n1.tgz n1
