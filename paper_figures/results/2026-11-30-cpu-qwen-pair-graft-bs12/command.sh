#!/usr/bin/env bash
# Issue 9's verification budget on the real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 CPU (2 cores shared
# with other work: latencies are not speed results), 64 new tokens, --tree-bs 12, w 8, grafting
# (length 6, n-grams 3 then 2): ar and swiftspec d = 3 with grafting, one prompt a dataset (7
# queries). Made by paper_figures/graft_cpu.sh's step 2 (2026-11-30, 11:18-11:55 UTC):
#   bash paper_figures/graft_cpu.sh paper_figures/results/2026-11-30-cpu-qwen-pair-graft
# which writes this folder as its OUT-bs12. compare.md: lossless yes.
# Fourth session, 14:11-14:34 UTC (rows: tree at ac4b315, swiftspec d = 6 at 2be9874): serial tree with
# grafting and swiftspec d = 6 with grafting, the same 7 queries, so that runs at the CLI's defaults
# (--tree-bs 12, --graft ngram) can replay tree and the d measured on the 70B/3B pair (6).
# Accepted a round (compare.md, lossless yes): swiftspec d = 3 4.01, d = 6 4.89, tree 5.73.
COMMON="--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --max-new-tokens 64 --chain-k 7
        --tree-w 8 --device cpu --dtype float32 --data-dir ../shared/datasets/eagle --tree-bs 12 --limit 1
        --out paper_figures/results/2026-11-30-cpu-qwen-pair-graft-bs12"
python3 -m swiftspec_bench.cli run $COMMON --systems tree --graft ngram
python3 -m swiftspec_bench.cli run $COMMON --systems swiftspec --draft-steps 6 --graft ngram
# Sixth session, 17:43-18:15 UTC (rows at d382836): ar, swiftspec d = 3 and tree, grafting, to 4
# prompts a dataset (28 queries; --limit 2 then --limit 4, each resuming), so that a GPU run at
# TREE_BS=12 replays more than one query a dataset. compare.md: lossless yes (28 of 28 each);
# pooled accepted a round: swiftspec d = 3 4.11, tree 5.82 (swiftspec d = 6: its 7 queries).
COMMON="${COMMON/--limit 1/--limit 4}"
python3 -m swiftspec_bench.cli run $COMMON --systems ar
python3 -m swiftspec_bench.cli run $COMMON --systems swiftspec --draft-steps 3 --graft ngram
python3 -m swiftspec_bench.cli run $COMMON --systems tree --graft ngram
# Seventh session, 18:43-20:28 UTC (new rows at 230d25f, from a worktree of that commit): every
# system to 10 prompts a dataset (70 queries with mt_bench's second turns), and swiftspec at d = 4
# too, so that GPU runs at TREE_BS=12 replay the same 70 queries as bs 8 runs and a d = 4 run has
# its own recordings. compare.md: lossless yes (every system, 70 of 70); pooled accepted a round:
# swiftspec d = 3 3.84, d = 4 4.25, tree 5.27 (ar 1).
COMMON="${COMMON/--limit 4/--limit 10}"
python3 -m swiftspec_bench.cli run $COMMON --systems swiftspec --draft-steps 3 --graft ngram
python3 -m swiftspec_bench.cli run $COMMON --systems tree --graft ngram
python3 -m swiftspec_bench.cli run $COMMON --systems ar
python3 -m swiftspec_bench.cli run $COMMON --systems swiftspec --draft-steps 4 --graft ngram
