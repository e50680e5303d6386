#!/usr/bin/env bash
# Session 28, call 1 (NOTES "Twenty-eighth session, call 1"), one H200, main at the commit given.
# session27/next-h200-branches.sh with two changes: README.md travels with each copy (the
# persistent-engine patch touches it; without it `patch` skipped that hunk and failed), and the
# engine's checks run first (its GPU tests, then the forward / draft_step rows against the bar),
# the probe's chain and tree runs after them while time is left. Each branch is its patch
# (session27/<branch>.patch, `git diff --no-renames main <branch>`) on its own copy of main.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nb; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session27
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $O/env.log
for b in tree-attention tma-cache persistent-engine; do
  rm -rf /tmp/$b; mkdir -p /tmp/$b
  cp -r swiftspec_core swiftspec_bench paper_figures cuda tests pyproject.toml README.md /tmp/$b/
  (cd /tmp/$b && patch -s -p1 < $P/$b.patch) && echo "$b patched"
done
(cd /tmp/persistent-engine && PYTHONPATH=. timeout -k 5 180 python3 -m pytest -q -x -rfE -p no:cacheprovider \
    tests/test_persistent_forward.py > $O/engine-tests.log 2>&1)
echo "engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/engine-tests.log)"
(cd /tmp/persistent-engine && PYTHONPATH=. timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b \
    --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours,persistent --out $O/kernels > $O/kernels.log 2>&1)
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; tail -2 $O/kernels.log
grep -E "^\| (op|forward|draft_step) " $O/kernels/kernels.md
probe() {  # probe BRANCH LABEL ARGS..: one persistent_mlp.py run in the branch's copy; 1 when it failed
  local b=$1 label=$1-$2; shift 2
  if (( $(date +%s) - START > 480 )); then echo "$label skipped (time)"; return 1; fi
  (cd /tmp/$b && PYTHONPATH=. timeout -k 5 80 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(" | cut -c1-100
  grep -E "^\| (ours|persistent 1024x[34], deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  return $rc
}
for b in tma-cache tree-attention; do
  probe $b chain-m9 --attention --rows 9 --rings 1024x4 || continue
  probe $b tree40-m9 --attention --rows 9 --rings 1024x4 --tree-rows 40 --timeline
  [ $b = tma-cache ] && probe $b tree200-m9 --attention --rows 9 --rings 1024x4 --tree-rows 200
  [ $b = tma-cache ] && probe $b tree60-m16 --attention --rows 16 --rings 1024x4 --tree-rows 60
done
cd $OUT && tar czf nb.tgz nb
