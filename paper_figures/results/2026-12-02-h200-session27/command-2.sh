#!/usr/bin/env bash
# Session 27, call 2 (NOTES v176), one H200: the persistent layer with gate_up's and qkv's sums added
# item by item (two buffers, not all of a block's items kept for one epilogue), q's copy at the
# region's start and the attention at M <= 16. Rings 1024x3 (and the deeper rings that now fit) at
# M = 8, 9 and 16, with the timeline at M = 8 and 9. ~3 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  if (( $(date +%s) - START > 500 )); then echo "$label skipped (time)"; return; fi
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (ours|persistent|[A-Z] \(|the layer)" $O/$label.md | cut -c1-150; tail -2 $O/$label.log
}
run layer-m8 --attention --rows 8 --rings 1024x3,1024x4,1024x5 --timeline
run layer-m9 --attention --rows 9 --rings 1024x3,1024x4 --timeline
run layer-m16 --attention --rows 16 --rings 1024x3,1024x4
run qkv-m9 --qkv --rows 9 --rings 1024x3
cd $OUT && tar czf c2.tgz c2
