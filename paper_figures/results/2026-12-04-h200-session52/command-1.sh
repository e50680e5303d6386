#!/usr/bin/env bash
# Session 52, call 1 (NOTES v289), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# 1. tests/test_gpu.py at the commit as is (owed since session 51's review).
# 2. warm-merge.patch (the attention's idle last warp runs the merge dry, so the merging block finds
#    its code in the SM's instruction cache) against the commit as is (base, a copy): attention
#    fingerprints on both, attention_trace --cold on both (70B, 8B), the 70B AWQ forward and the 8B
#    and 1B bf16 forwards in alternated pairs, the patched side's attention GPU tests.
set -u
source paper_figures/device_env.sh
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=$PWD/paper_figures/results/2026-12-04-h200-session52
O=$OUT/c1; mkdir -p $O; START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
BASE=$(mktemp -d); cp -r cuda swiftspec_core swiftspec_bench paper_figures tests pyproject.toml README.md $BASE/
patch -p1 -s < $HERE/warm-merge.patch || { echo "error: warm-merge.patch does not apply"; exit 2; }
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
{ echo "commit $SWIFTSPEC_COMMIT + warm-merge.patch (base: the commit as is), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
side_dir() { [ $1 = new ] && echo $PWD || echo $BASE; }
(cd $BASE && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu.py > $O/gpu-tests-base.log 2>&1)
echo "test_gpu.py at the commit: exit $? $(tail -1 $O/gpu-tests-base.log) ($(elapsed) s)"
for t in new base; do
  (cd $(side_dir $t) && PYTHONPATH=. timeout -k 5 90 python3 $HERE/attention_hash.py > $O/hashes-$t.json 2> $O/hashes-$t.log)
  echo "hashes $t: exit $? ($(elapsed) s)"
done
if cmp -s $O/hashes-base.json $O/hashes-new.json; then echo "fingerprints: all $(grep -c '": "' $O/hashes-new.json) equal"
else echo "fingerprints DIFFER:"; diff $O/hashes-base.json $O/hashes-new.json | head; fi
for t in new base; do
  (cd $(side_dir $t) && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --models llama-3-70b,llama-3-8b --cold \
      > $O/trace-cold-$t.md 2> $O/trace-cold-$t.log)
  echo "trace cold $t: exit $? ($(elapsed) s)"
  grep -E "^llama|^\| (items done -> ticket|merge start -> merge max|merge max -> merge summed) |^first" $O/trace-cold-$t.md | cut -c1-70
done
profile() {  # profile SIDE RUN NAME ARGS..
  local t=$1 run=$2 name=$3; shift 3
  (cd $(side_dir $t) && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py "$@" \
      --csv $O/profile-$name-$t-$run.csv > $O/profile-$name-$t-$run.md 2> $O/profile-$name-$t-$run.log)
  echo "profile $name $t-$run exit $? ($(elapsed) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$name-$t-$run.md | tr '\n' ' ')" \
      "$(grep -E "^\| attention " $O/profile-$name-$t-$run.md | cut -d'|' -f4,5 | tr '\n' ' ')"
}
for run in a b c; do
  [ $run = c ] && [ "$(elapsed)" -ge 330 ] && break
  for t in new base; do profile $t $run 70b-awq --models llama-3-70b --quant awq; done
  for t in new base; do profile $t $run bf16 --models llama-3-8b,llama-3.2-1b; done
done
bash paper_figures/gpu_test_files.sh $O/tests $(( 540 - $(elapsed) )) tests/test_kernel_attention.py
cat $O/tests/summary.md
rm -rf $BASE; cd $OUT && tar czf c1.tgz c1 && rm -rf c1
