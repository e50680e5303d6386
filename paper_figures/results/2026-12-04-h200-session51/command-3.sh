#!/usr/bin/env bash
# Session 51, call 3 (NOTES v287), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# At the commit (the AWQ weights evict-first, landed): awq_fp16_probe (o, qkv, down), the 70B AWQ
# forward twice, the AWQ GPU tests; then the 8B bf16 fused forward's timeline (layer 2, its blocks)
# on the commit and with bf16-evict-first.patch (a copy).
set -u
source paper_figures/device_env.sh
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=$PWD/paper_figures/results/2026-12-04-h200-session51
O=$OUT/c3; mkdir -p $O; START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_fp16_probe.py --out $O/probe --ops o,qkv,down > $O/probe.log 2>&1
echo "probe: exit $? ($(elapsed) s)"; grep -E "^\| (o|qkv|down) \| (1|8|16) " $O/probe.log | cut -d'|' -f2-7
for run in a b; do
  PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py --models llama-3-70b --quant awq \
      --csv $O/profile-$run.csv > $O/profile-$run.md 2> $O/profile-$run.log
  echo "profile $run exit $? ($(elapsed) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$run.md)"
done
PYTHONPATH=. timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py tests/test_awq_fp16_probe.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(elapsed) s)"; grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
NEW=$(mktemp -d); cp -r cuda swiftspec_core swiftspec_bench paper_figures pyproject.toml $NEW/
(cd $NEW && patch -p1 -s < $HERE/bf16-evict-first.patch) || { echo "error: bf16-evict-first.patch does not apply"; exit 2; }
for side in base new; do
  dir=$PWD; [ $side = new ] && dir=$NEW
  (cd $dir && PYTHONPATH=. timeout -k 5 100 python3 paper_figures/forward_timeline.py --models llama-3-8b \
      --csv $O/timeline8b-$side.csv --blocks $O/blocks8b-$side.csv --layer 2 > $O/timeline8b-$side.md 2> $O/timeline8b-$side.log)
  echo "8B timeline $side: exit $? ($(elapsed) s)"; grep -E "^\| (qkv|attention|o|gate_up|down|place) \|" $O/timeline8b-$side.md | head -6
done
rm -rf $NEW; cd $OUT && tar czf c3.tgz c3 && rm -rf c3
