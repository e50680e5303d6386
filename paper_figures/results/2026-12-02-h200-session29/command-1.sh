#!/usr/bin/env bash
# Prepared at the end of session 28 (NOTES "For the next session (written at the end of the
# twenty-eighth)"), not run: one H200, main at the commit given; carry [".data"]. Why the persistent
# draft lost end to end on short prompts (calls 6, 8: qa's draft time a round +18%, gsm8k's short
# prompts +10%, its long ones +0-2%) while its draft step wins in the kernel bench, and two fixes:
# wide-prologue.patch (v190: stage_tree's loads batched) and used-chunks.patch (v191, on v190: only
# the chunks the step's tokens see are paged and merged, not the graph's whole span). Each patch on
# its own copy of main. In order:
# (1) the draft step staged as the drafter stages it (385 visible rows a token: draft_visible),
#     width 9 at context 1000 and width 15 (--graft-len 6) at 300, ours and persistent;
# (2) used-chunks' engine GPU tests (tests/test_persistent_forward.py); the probe's layer in qa's regime (a 100-row prefix, a 280-row tree, the 385-wide block, span
#     1024; --timeline) on main and used-chunks, beside the same tree bare and a chain at 1000;
# (3) one qa decode of each kernel set under the profiler (profile_decode.py), used-chunks;
# (4) qa and gsm8k end to end, 4 prompts, persistent (used-chunks) first, then fused, in what is
#     left of ~9 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nd; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session28
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for b in wide-prologue used-chunks; do
  rm -rf /tmp/$b; mkdir -p /tmp/$b
  cp -r swiftspec_core swiftspec_bench paper_figures cuda tests pyproject.toml README.md .data /tmp/$b/
  (cd /tmp/$b && patch -s -p1 < $P/$b.patch) && echo "$b patched"
done
kernels() {  # kernels TREE LABEL GRAFT_LEN CONTEXT [IMPLS]: the draft step (w 8, bs 12)
  (cd $1 && PYTHONPATH=. timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 \
      --context $4 --ops draft_step --impl ${5:-persistent} --graft-len $3 --out $O/kernels-$2 > $O/kernels-$2.log 2>&1)
  echo "kernels $2 exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| draft_step " $O/kernels-$2/kernels.md
}
kernels . main-w9 0 1000 ours,persistent
kernels /tmp/used-chunks used-w9 0 1000
kernels . main-w15-300 6 300 ours,persistent
kernels /tmp/wide-prologue wide-w15-300 6 300
kernels /tmp/used-chunks used-w15-300 6 300
(cd /tmp/used-chunks && PYTHONPATH=. timeout -k 5 150 python3 -m pytest -q -x -rfE -p no:cacheprovider \
    tests/test_persistent_forward.py > $O/used-tests.log 2>&1)  # its span (512) past the rows in use (~310)
echo "used-chunks engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/used-tests.log)"
probe() {  # probe TREE LABEL ARGS..: the persistent layer
  (cd $1 && PYTHONPATH=. timeout -k 5 70 python3 paper_figures/persistent_mlp.py "${@:3}" > $O/$2.md 2> $O/$2.log)
  echo "$2 exit $? ($(( $(date +%s) - START )) s)"
  sed -n '/deep, SM clock/,/shallow, SM clock/p' $O/$2.md | grep -E "^\| [QSROAB] \(|the layer" | cut -c1-100
  grep -E "^\| (ours|persistent 1024x4, deep \|)" $O/$2.md | cut -c1-120; tail -1 $O/$2.log
}
QA="--attention --rows 15 --rings 1024x4 --context 100 --tree-rows 280"  # qa mid-answer: 395 rows in use
probe . main-qa-step $QA --visible 385 --span 1024 --timeline  # as the drafter: a 385-wide block, span 1024
probe /tmp/used-chunks used-qa-step $QA --visible 385 --span 1024 --timeline
probe . main-qa-bare $QA  # the same tree, a path-wide block, the rows in use only
probe /tmp/used-chunks used-chain-step --attention --rows 15 --rings 1024x4 --context 1000
for k in persistent fused; do  # one qa decode under the profiler
  (cd /tmp/used-chunks && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_decode.py $O/decode-$k.md -- run \
      --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16 --systems tree \
      --kernels $k --acceptance replay:paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12 \
      --datasets qa --limit 1 --max-new-tokens 256 --data-dir .data/eagle --out $O/decode-$k > $O/decode-$k.log 2>&1)
  echo "decode $k exit $? ($(( $(date +%s) - START )) s)"; head -8 $O/decode-$k.md; tail -1 $O/decode-$k.md
done
(cd /tmp/used-chunks && REPLAY=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12 TREE_BS=12 \
    DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e $(( 560 - ($(date +%s) - START) )) \
    "4 --systems tree --kernels persistent --datasets qa,gsm8k" "4 --systems tree --kernels fused --datasets qa,gsm8k" \
    > $O/e2e.log 2>&1)
grep -hE "^==|skipped|error" $O/e2e.log | tail -6
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-240
cd $OUT && tar czf nd.tgz nd
