#!/usr/bin/env bash
# Session 27, call 8 (NOTES v182), one H200, main (the producer warp): what M = 9 pays over M = 8.
# The layer at M = 8 built for 8 and for 16 rows (the second n8 tile alone), M = 9 and 16, rings
# 1024x3 and 1024x4, with the timeline (GEMM marks now with "x landed"). ~2.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c8; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  if (( $(date +%s) - START > 480 )); then echo "$label skipped (time)"; return; fi
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(|first page consumed|x landed" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x[34], deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  if [ $rc -ne 0 ]; then cd $OUT && tar czf c8.tgz c8; exit 1; fi
}
run layer-m8 --attention --rows 8 --rings 1024x3,1024x4 --timeline
run layer-m8-built16 --attention --rows 8 --build-rows 16 --timeline
run layer-m9 --attention --rows 9 --rings 1024x3,1024x4 --timeline
run layer-m16 --attention --rows 16 --rings 1024x3,1024x4
cd $OUT && tar czf c8.tgz c8
