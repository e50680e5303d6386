#!/usr/bin/env bash
# Session 29, call 3: the drafter on our topk kernel under both kernel sets, and profile_decode.py's idle tables: one qa
# decode of each kernel set under the profiler on main, then qa / gsm8k end to end, main's persistent
# first, then fused. One H200, carry [".data"].
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nf; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
for k in persistent fused; do  # one qa decode under the profiler
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_decode.py $O/decode-$k.md -- run \
      --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16 --systems tree \
      --kernels $k --acceptance replay:$R \
      --datasets qa --limit 1 --max-new-tokens 256 --data-dir .data/eagle --out $O/decode-$k > $O/decode-$k.log 2>&1
  echo "decode $k exit $? ($(( $(date +%s) - START )) s)"; head -12 $O/decode-$k.md; sed -n "/^| idle after/,$ p" $O/decode-$k.md
done
REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e $(( 480 - ($(date +%s) - START) )) \
    "4 --systems tree --kernels persistent --datasets qa,gsm8k" "4 --systems tree --kernels fused --datasets qa,gsm8k" \
    > $O/e2e.log 2>&1
grep -hE "^==|skipped|error" $O/e2e.log | tail -6
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-240
cd $OUT && tar czf nf.tgz nf
