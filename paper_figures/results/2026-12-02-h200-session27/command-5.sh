#!/usr/bin/env bash
# Session 27, call 5 (NOTES v179), one H200: the persistent probe without the proxy fence before each
# page's copy (and each streamed y slice's), against its copy with the fences (page-fence.patch puts
# them back): the layer at M = 8 on both, then without: --qkv at M = 8 and 9 and the layer at M = 8,
# 9 and 16, with the timeline. ~2.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O; HERE=$PWD/paper_figures/results/2026-12-02-h200-session27
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/fence; mkdir -p /tmp/fence; cp -r swiftspec_core swiftspec_bench paper_figures cuda pyproject.toml /tmp/fence/
(cd /tmp/fence && patch -s -p1 < $HERE/page-fence.patch) && echo "fence patched"
run() {  # run TREE LABEL ARGS.. (TREE: . or /tmp/fence)
  local tree=$1 label=$2; shift 2
  if (( $(date +%s) - START > 500 )); then echo "$label skipped (time)"; return; fi
  (cd $tree && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  echo "$label exit $? ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(|issuing|waited" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x3, deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
}
run /tmp/fence fence-layer-m8 --attention --rows 8
run . layer-m8 --attention --rows 8 --timeline
run . qkv-m8 --qkv --rows 8 --timeline
run . qkv-m9 --qkv --rows 9 --timeline
run . layer-m9 --attention --rows 9 --timeline
run . layer-m16 --attention --rows 16
cd $OUT && tar czf c5.tgz c5
