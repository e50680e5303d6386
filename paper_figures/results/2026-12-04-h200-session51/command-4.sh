#!/usr/bin/env bash
# Session 51, call 4 (NOTES v288), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# merge-compact.patch (the merge's batch math not unrolled: its code ~16x smaller, its batch in local
# memory) against the commit as is (base, a copy): attention_trace --cold on both (70B, 8B), the 70B
# AWQ forward in alternated pairs, then the patched side's attention GPU tests. A diagnostic: the
# patch's hd64 build spills 4 bytes (test_cuda_compile would refuse it).
set -u
source paper_figures/device_env.sh
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=$PWD/paper_figures/results/2026-12-04-h200-session51
O=$OUT/c4; mkdir -p $O; START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
BASE=$(mktemp -d); cp -r cuda swiftspec_core swiftspec_bench paper_figures tests pyproject.toml $BASE/
patch -p1 -s < $HERE/merge-compact.patch || { echo "error: merge-compact.patch does not apply"; exit 2; }
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
{ echo "commit $SWIFTSPEC_COMMIT + merge-compact.patch (base: the commit as is), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
side_dir() { [ $1 = new ] && echo $PWD || echo $BASE; }
for t in new base; do
  (cd $(side_dir $t) && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b --cold \
      > $O/trace-cold-$t.md 2> $O/trace-cold-$t.log)
  echo "trace cold $t: exit $? ($(elapsed) s)"
  grep -E "^llama|^\| (merge start -> merge max|merge max -> merge summed) |^first" $O/trace-cold-$t.md | cut -c1-60
done
for run in a b c; do
  [ $run = c ] && [ "$(elapsed)" -ge 260 ] && break
  for t in new base; do
    (cd $(side_dir $t) && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py --models llama-3-70b --quant awq \
        --csv $O/profile-$t-$run.csv > $O/profile-$t-$run.md 2> $O/profile-$t-$run.log)
    echo "profile $t-$run exit $? ($(elapsed) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$t-$run.md)" \
        "$(grep -E "^\| attention " $O/profile-$t-$run.md | cut -d'|' -f4,5)"
  done
done
bash paper_figures/gpu_test_files.sh $O/tests $(( 420 - $(elapsed) )) tests/test_kernel_attention.py
cat $O/tests/summary.md
rm -rf $BASE; cd $OUT && tar czf c4.tgz c4 && rm -rf c4
