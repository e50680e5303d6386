#!/usr/bin/env bash
# Real trees against replayed ones (NOTES v84), swiftspec lockstep at d = 3, bs 8, w 8, grafting:
# the real Qwen pair (fp32 CPU; qa and mt_bench, 1 prompt each and mt_bench's second turn, 48
# tokens) and its replay at tiny-llama shapes from results/2026-11-30-cpu-qwen-pair-graft (the same
# datasets, 4 prompts each, 128 tokens). paper_figures/tree_shapes.py prints a line per run.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-tree-shapes}
SRC=$(mktemp -d)
PYTHONPATH=. python3 paper_figures/replay_union.py $SRC paper_figures/results/2026-11-30-cpu-qwen-pair-graft \
    paper_figures/results/cpu-qwen-pair > /dev/null
SETTINGS=(--tree-w 8 --tree-bs 8 --graft ngram --systems swiftspec --draft-steps 3 --datasets qa,mt_bench
          --data-dir ${DATA_DIR:-../shared/datasets/eagle})
{ PYTHONPATH=. python3 paper_figures/tree_shapes.py real run --target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b \
      --device cpu --dtype float32 --limit 1 --max-new-tokens 48 "${SETTINGS[@]}" --out $(mktemp -d) 2>/dev/null | tail -1
  PYTHONPATH=. python3 paper_figures/tree_shapes.py replayed run --target tiny-llama --draft tiny-llama --weights random \
      --device cpu --dtype float32 --acceptance replay:$SRC --limit 4 --max-new-tokens 128 "${SETTINGS[@]}" \
      --out $(mktemp -d) 2>/dev/null | tail -1
} > $OUT/shapes.md
rm -rf $SRC
