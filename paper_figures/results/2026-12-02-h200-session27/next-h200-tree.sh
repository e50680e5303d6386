#!/usr/bin/env bash
# Prepared at the end of session 27 (NOTES v185), not run: on branch tree-attention (check it out
# first; it holds main's header split too, nvcc-checked only), one H200. The persistent layer with a
# draft step's tree (per-token positions, cache rows and tree masks) against the chain it was: the
# chain at M = 8 (1024x3) and 9 (1024x4) as the regression (c9: 46.29, c10: 48.36), then trees of
# 40 and 200 drafted rows at M = 9 and of 60 at M = 16, the first with the timeline. A hang stops
# the call at that run. ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/n1; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  if (( $(date +%s) - START > 420 )); then echo "$label skipped (time)"; return; fi
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x[34], deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  if [ $rc -ne 0 ]; then cd $OUT && tar czf n1.tgz n1; exit 1; fi
}
run chain-m8 --attention --rows 8
run chain-m9 --attention --rows 9 --rings 1024x4
run tree40-m9 --attention --rows 9 --rings 1024x4 --tree-rows 40 --timeline
run tree200-m9 --attention --rows 9 --rings 1024x4 --tree-rows 200
run tree60-m16 --attention --rows 16 --rings 1024x4 --tree-rows 60
cd $OUT && tar czf n1.tgz n1
