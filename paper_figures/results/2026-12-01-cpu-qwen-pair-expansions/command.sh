#!/usr/bin/env bash
# The real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this 2-core CPU (latencies are not speed results),
# recorded with each draft expansion's top-w log-probs (draft_topk_samples, NOTES v82), so that
# replay draws them a node: 6 datasets x 1 prompt + mt_bench's second turn (7 queries), 64 tokens,
# bs 8, w 8, grafting (as results/2026-11-30-cpu-qwen-pair-graft): ar, swiftspec lockstep at d = 3,
# tree.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-qwen-pair-expansions}
COMMON=(--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 1 --max-new-tokens 64
        --chain-k 7 --tree-w 8 --tree-bs 8 --graft ngram --device cpu --dtype float32
        --data-dir ${DATA_DIR:-../shared/datasets/eagle} --out $OUT)
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps 3 >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems ar >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli compare $OUT --format markdown > $OUT/compare.md 2>&1
