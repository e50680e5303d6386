#!/usr/bin/env bash
# Session 31, call 2 (one H200, carry [".data"]), main at the commit given. (1) v195: where the
# persistent target's layer time goes (target_timeline.py on session31/persistent-target.patch,
# widths 1, 8, 16, context 1000); (2) ab_replay: the fused 8B forward with the tree attention's item
# in attention_item.cuh (the branch) against the original (attention-item-reverse.patch: B);
# (3) session30/next-h200-interleave.sh's question: tree, --kernels fused,persistent --interleave.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
ROOT=$PWD; START=$(date +%s); O=$OUT/s2; mkdir -p $O; P=$ROOT/paper_figures/results/2026-12-02-h200-session31
echo "commit $SWIFTSPEC_COMMIT (+ session31/persistent-target.patch for (1) and (2)), $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/pt && mkdir -p /tmp/pt && cp -r . /tmp/pt/ && cd /tmp/pt && patch -s -p1 < $P/persistent-target.patch && echo "persistent-target patched"
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
PYTHONPATH=. timeout -k 5 170 python3 $P/target_timeline.py --widths 1,8,16 > $O/timeline.md 2> $O/timeline.log
echo "timeline exit $? ($(( $(date +%s) - START )) s)"; grep -E "^## |^\| (Q|T|M|O|A|B) |the layer" $O/timeline.md | cut -c1-110; tail -2 $O/timeline.log
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/ab_replay.py --patch $ROOT/paper_figures/results/2026-12-02-h200-session30/attention-item-reverse.patch \
    --models llama-3-8b --width 8 > $O/ab-attention.md 2> $O/ab-attention.log
echo "ab_replay exit $? ($(( $(date +%s) - START )) s)"; tail -5 $O/ab-attention.md
cd $ROOT && python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree --kernels fused --datasets qa --limit 1 \
    --max-new-tokens 32 --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
timeout -k 5 $(( 585 - ($(date +%s) - START) )) python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree \
    --kernels fused,persistent --interleave --datasets qa,gsm8k,humaneval --limit 4 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -2 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "^\| llama" $O/e2e/compare.md | cut -c1-160
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar tree:graft:fused --baseline tree:graft:fused > $O/paired.md 2>&1; tail -8 $O/paired.md
find $O -name results.parquet -delete
cd $OUT && tar czf s2.tgz s2
