#!/usr/bin/env bash
# Session 27, call 4 (NOTES v178), one H200: after the M = 9 mends (x, y slices
# 128-byte aligned in global memory; rows past M in the second n8 tile read distinct banks): --qkv at
# M = 8, 9, 16 and the layer at M = 9 and 8, with the timeline (the GEMM marks now with the cycles
# spent issuing pages). ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  if (( $(date +%s) - START > 500 )); then echo "$label skipped (time)"; return; fi
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $? ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QOAB] \(" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x3, deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
}
run qkv-m8 --qkv --rows 8 --timeline
run qkv-m9 --qkv --rows 9 --timeline
run qkv-m16 --qkv --rows 16 --timeline
run layer-m9 --attention --rows 9 --timeline
run layer-m8 --attention --rows 8
cd $OUT && tar czf c4.tgz c4
