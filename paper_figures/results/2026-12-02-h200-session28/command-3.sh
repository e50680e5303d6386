#!/usr/bin/env bash
# Session 28, call 3 (NOTES "Twenty-eighth session, call 3"), one H200, main at the commit given.
# (1) main: the persistent kernel reads the tree from the staged block itself (v188): the engine's
#     GPU tests, the forward / draft_step rows at context 1000 and 1500, the draft step's profile;
# (2) s-pairs.patch (v189: phase S runs two items at a time) on a copy of main: the same rows at
#     1500, and the probe's chain and trees beside main's (a tree of 40 rows past 1000: 17 chunks,
#     136 items for 132 blocks).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session28
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $O/env.log
rm -rf /tmp/s-pairs; mkdir -p /tmp/s-pairs
cp -r swiftspec_core swiftspec_bench paper_figures cuda tests pyproject.toml README.md /tmp/s-pairs/
(cd /tmp/s-pairs && patch -s -p1 < $P/s-pairs.patch) && echo "s-pairs patched"
timeout -k 5 200 python3 -m pytest -q -s -rfE -p no:cacheprovider tests/test_persistent_forward.py > $O/engine-tests.log 2>&1
echo "engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/engine-tests.log)"
grep -E "relative error|Error|assert" $O/engine-tests.log | head -8
kernels() {  # kernels TREE LABEL ARGS..: one kernel-bench table for llama-3.2-1b
  local tree=$1 label=$2; shift 2
  (cd $tree && PYTHONPATH=. timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 \
      "$@" --out $O/kernels-$label > $O/kernels-$label.log 2>&1)
  echo "kernels $label exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (forward|draft_step) " $O/kernels-$label/kernels.md
}
kernels . main1000 --m 8 --context 1000 --ops forward,draft_step --impl ours,persistent
kernels . main1500 --m 8 --context 1500 --ops draft_step --impl ours,persistent
kernels /tmp/s-pairs pairs1500 --m 8 --context 1500 --ops draft_step --impl persistent
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py --models llama-3.2-1b --width 9 --context 1000 \
    --impl persistent --csv $O/profile-persistent.csv > $O/profile-persistent.md 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(llama|\| )" $O/profile-persistent.md | cut -c1-130
probe() {  # probe TREE LABEL ARGS..: one persistent_mlp.py run
  local tree=$1 label=$2; shift 2
  if (( $(date +%s) - START > 500 )); then echo "$label skipped (time)"; return 1; fi
  (cd $tree && PYTHONPATH=. timeout -k 5 70 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSR] \(" | cut -c1-100
  grep -E "^\| (ours|persistent 1024x4, deep \|)" $O/$label.md | cut -c1-120; tail -1 $O/$label.log
}
probe . main-tree40-m9 --attention --rows 9 --rings 1024x4 --tree-rows 40 --timeline
probe /tmp/s-pairs pairs-tree40-m9 --attention --rows 9 --rings 1024x4 --tree-rows 40 --timeline
probe /tmp/s-pairs pairs-chain-m9 --attention --rows 9 --rings 1024x4
probe /tmp/s-pairs pairs-tree200-m9 --attention --rows 9 --rings 1024x4 --tree-rows 200
probe /tmp/s-pairs pairs-tree60-m16 --attention --rows 16 --rings 1024x4 --tree-rows 60
probe . main-chain-m9 --attention --rows 9 --rings 1024x4
cd $OUT && tar czf c3.tgz c3
