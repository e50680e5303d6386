#!/usr/bin/env bash
# Session 27, call 7 (NOTES v181), one H200, branch m9-tail at the commit given: three changes for
# what M = 9 still paid (v180), each taken back in turn by its patch (patch -R) so each is measured
# on the same machine: norm-spread (the norm's scaling by every compute thread), sums-mbarriers
# (an item's sums handed over by mbarriers, not a block barrier), rope-prefetch (qkv's epilogue's
# RoPE lines into L1 before the item's pages). ~2.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c7; mkdir -p $O; HERE=$PWD/paper_figures/results/2026-12-02-h200-session27
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
back=""  # the variants: all three, then without rope-prefetch, then also without sums-mbarriers, then none
for v in abc ab a base; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda pyproject.toml /tmp/$v/
  for p in $back; do (cd /tmp/$v && patch -s -R -p1 < $HERE/$p.patch) || echo "$v: $p did not come off"; done
  case $v in abc) back="rope-prefetch";; ab) back="rope-prefetch sums-mbarriers";; a) back="rope-prefetch sums-mbarriers norm-spread";; esac
done
run() {  # run VARIANT LABEL ARGS..
  local v=$1 label=$1-$2; shift 2
  if (( $(date +%s) - START > 480 )); then echo "$label skipped (time)"; return; fi
  (cd /tmp/$v && PYTHONPATH=. timeout -k 5 75 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  local rc=$?; echo "$label exit $rc ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$label.md | grep -E "^\| [QSROAB] \(|first page consumed|landed \|" | cut -c1-110
  grep -E "^\| (ours|persistent 1024x3, deep \|)" $O/$label.md | cut -c1-120; tail -2 $O/$label.log
  if [ $rc -ne 0 ]; then cd $OUT && tar czf c7.tgz c7; exit 1; fi
}
run abc layer-m9 --attention --rows 9 --timeline
run base layer-m9 --attention --rows 9 --timeline
run a layer-m9 --attention --rows 9
run ab layer-m9 --attention --rows 9
run abc layer-m8 --attention --rows 8 --timeline
run base layer-m8 --attention --rows 8
run abc layer-m16 --attention --rows 16
run abc qkv-m9 --qkv --rows 9
cd $OUT && tar czf c7.tgz c7
