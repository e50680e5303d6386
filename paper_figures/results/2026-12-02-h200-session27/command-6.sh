#!/usr/bin/env bash
# Session 27, call 6 (NOTES v180), one H200, branch producer: the persistent probe with a producer warp
# that issues the pages (per-slot empty barriers, no block barrier a page). A hang stops the call at
# the first run. The layer at M = 8 (timeline), --qkv at M = 8 and 9 (timeline), the layer at M = 9
# (timeline) and 16. ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  if (( $(date +%s) - START > 480 )); then echo "$label skipped (time)"; return; fi
  PYTHONPATH=. timeout -k 5 75 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(|waited|landed" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x3, (deep|shallow) \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  if [ $rc -ne 0 ]; then cd $OUT && tar czf c6.tgz c6; exit 1; fi
}
run layer-m8 --attention --rows 8 --timeline
run qkv-m8 --qkv --rows 8 --timeline
run qkv-m9 --qkv --rows 9 --timeline
run layer-m9 --attention --rows 9 --timeline
run layer-m16 --attention --rows 16
cd $OUT && tar czf c6.tgz c6
