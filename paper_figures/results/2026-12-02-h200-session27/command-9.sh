#!/usr/bin/env bash
# Session 27, call 9 (NOTES v183), one H200, main at the commit given: the x / y slices in whole
# 128-byte lines (slice-lines.patch) and an item's outputs by a moving run of 2 NT warps
# (spread-epilogue.patch), each taken off in turn (patch -R) and measured on one machine: the layer
# at M = 9 and 8 (1024x3), then both at M = 9 and 16 on 1024x4. ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c9; mkdir -p $O; HERE=$PWD/paper_figures/results/2026-12-02-h200-session27
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for v in both lines base; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda pyproject.toml /tmp/$v/
done
(cd /tmp/lines && patch -s -R -p1 < $HERE/spread-epilogue.patch) || echo "lines: not patched"
(cd /tmp/base && patch -s -R -p1 < $HERE/spread-epilogue.patch && patch -s -R -p1 < $HERE/slice-lines.patch) || echo "base: not patched"
run() {  # run VARIANT LABEL ARGS..
  local v=$1 label=$1-$2; shift 2
  if (( $(date +%s) - START > 420 )); then echo "$label skipped (time)"; return; fi
  (cd /tmp/$v && PYTHONPATH=. timeout -k 5 75 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(|x landed|first page consumed" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x[34], deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  if [ $rc -ne 0 ]; then cd $OUT && tar czf c9.tgz c9; exit 1; fi
}
run both layer-m9 --attention --rows 9 --timeline
run base layer-m9 --attention --rows 9
run lines layer-m9 --attention --rows 9 --timeline
run both layer-m8 --attention --rows 8
run base layer-m8 --attention --rows 8
run both layer-m9-x4 --attention --rows 9 --rings 1024x4
run both layer-m16-x4 --attention --rows 16 --rings 1024x4
cd $OUT && tar czf c9.tgz c9
