#!/usr/bin/env bash
# Prepared at the end of session 27 (NOTES v185-v187), not run: on main, one H200, one call for the
# three stacked branches, each applied to its own copy of main (tree-attention.patch, tma-cache.patch,
# persistent-engine.patch: `git diff --no-renames main <branch>`, NOTES and results left out). In
# order: the tree in the probe (v185), the engine's cache through tensor maps (v186), the persistent
# forward in the engine with the draft-step bar (v187). A branch whose first run fails is left after
# its log; the next still runs. ~7 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nb; mkdir -p $O; HERE=$PWD/paper_figures/results/2026-12-02-h200-session27
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for b in tree-attention tma-cache persistent-engine; do
  rm -rf /tmp/$b; mkdir -p /tmp/$b; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests pyproject.toml /tmp/$b/
  (cd /tmp/$b && patch -s -p1 < $HERE/$b.patch) && echo "$b patched"
done
probe() {  # probe BRANCH LABEL ARGS..: one persistent_mlp.py run in the branch's copy; 1 when it failed
  local b=$1 label=$1-$2; shift 2
  if (( $(date +%s) - START > 540 )); then echo "$label skipped (time)"; return 1; fi
  (cd /tmp/$b && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(" | cut -c1-100
  grep -E "^\| (ours|persistent 1024x[34], deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  return $rc
}
for b in tree-attention tma-cache; do
  probe $b chain-m8 --attention --rows 8 || continue
  probe $b chain-m9 --attention --rows 9 --rings 1024x4 || continue
  probe $b tree40-m9 --attention --rows 9 --rings 1024x4 --tree-rows 40 --timeline
  probe $b tree200-m9 --attention --rows 9 --rings 1024x4 --tree-rows 200
  [ $b = tma-cache ] && probe $b tree60-m16 --attention --rows 16 --rings 1024x4 --tree-rows 60
done
(cd /tmp/persistent-engine && PYTHONPATH=. timeout -k 5 200 python3 -m pytest -q -x -p no:cacheprovider \
    tests/test_persistent_forward.py > $O/engine-tests.log 2>&1)
echo "engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/engine-tests.log)"
(cd /tmp/persistent-engine && PYTHONPATH=. timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b \
    --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours,persistent --out $O/kernels > $O/kernels.log 2>&1)
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; tail -2 $O/kernels.log
grep -E "^\| (op|forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf nb.tgz nb
