#!/usr/bin/env bash
# Session 27, call 3 (NOTES v177), one H200: why every GEMM phase is 20-50% slower at M = 9 than at
# M = 8 (c2). --qkv (no attention) at M = 8 built for 8 rows (one n8 tile) and for 16 (two tiles,
# the same 8 rows), and at M = 9 and 16, each with the timeline and its GEMM marks (first page
# consumed, last page landed, last consumed, cycles waited on pages). ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
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
run qkv-m8-built16 --qkv --rows 8 --build-rows 16 --timeline
run qkv-m9 --qkv --rows 9 --timeline
run qkv-m16 --qkv --rows 16 --timeline
cd $OUT && tar czf c3.tgz c3
