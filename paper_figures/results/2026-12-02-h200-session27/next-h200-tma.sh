#!/usr/bin/env bash
# Prepared at the end of session 27 (NOTES v186), not run: on branch tma-cache (check it out
# first; it holds tree-attention's change and main's header split too, none run yet), one H200. The
# persistent layer reading the engine's own KV cache ([L][rows][KV][64]) through TMA tensor maps
# (128-byte swizzle) instead of a padded copy: the chain at M = 8 and 9 (c9 46.29, c10 48.36 with
# the padded copy), the trees as in next-h200-tree.sh. A hang stops the call at that run. ~2 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/n2; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  if (( $(date +%s) - START > 420 )); then echo "$label skipped (time)"; return; fi
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x[34], deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  if [ $rc -ne 0 ]; then cd $OUT && tar czf n2.tgz n2; exit 1; fi
}
run chain-m8 --attention --rows 8
run chain-m9 --attention --rows 9 --rings 1024x4
run tree40-m9 --attention --rows 9 --rings 1024x4 --tree-rows 40 --timeline
run tree200-m9 --attention --rows 9 --rings 1024x4 --tree-rows 200
run tree60-m16 --attention --rows 16 --rings 1024x4 --tree-rows 60
cd $OUT && tar czf n2.tgz n2
