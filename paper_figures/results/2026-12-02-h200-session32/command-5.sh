#!/usr/bin/env bash
# Session 32, call 5 (one H200, carry [".data"]): an 8B-shaped draft (a --draft-noise run's: the
# target's weights plus 1% noise, real acceptance) on the persistent kernel's target build against
# the same draft fused, at draft steps 9 wide (--graft off: w 8 + 1) and 15 wide (grafting's default
# 6 more): tree at bs 12 (the target stays fused in both sets: only the draft's forward differs) and
# ar:fused as the reference, query by query, gsm8k / qa / humaneval x 2, 64 new tokens; compare's
# losslessness on each folder.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for graft in off ngram; do
  timeout -k 5 $(( 270 - ($(date +%s) - START) / 2 )) python3 -m swiftspec_bench.cli run --target llama-3-8b \
      --draft llama-3-8b --draft-noise 0.01 --weights random --device cuda --dtype bfloat16 --tree-bs 12 --tree-w 8 \
      --graft $graft --data-dir .data/eagle --max-new-tokens 64 --datasets gsm8k,qa,humaneval --limit 2 \
      --systems ar,tree --kernels fused,persistent --interleave --out $O/graft-$graft > $O/graft-$graft.log 2>&1
  echo "graft $graft: run exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/graft-$graft.log
  python3 -m swiftspec_bench.cli compare $O/graft-$graft --format markdown > $O/graft-$graft/compare.md 2>&1
  grep -E "^lossless" $O/graft-$graft/compare.md
  s=tree$([ $graft = ngram ] && echo :graft)
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/graft-$graft --ar ar:fused --baseline $s:fused > $O/paired-$graft.md 2>&1
  grep -E "^\| $s:persistent" $O/paired-$graft.md | cut -c1-160
done
find $O -name results.parquet -delete
cd $OUT && tar czf c5.tgz c5
