#!/usr/bin/env bash
# Issue 9 on the real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this project's 2-core CPU machine
# (shared all session with helpers' test runs, so latencies are not speed results), 64 new tokens,
# bs 8, w 8, graft length 6, n-grams 3 then 2. What finished this session (the queue was stopped at
# 10:35 UTC to free the cores for CI; a rerun resumes every step):
#   ar (14 queries), swiftspec:d2 (14), swiftspec:d3 (14), swiftspec:d3:graft (7: --limit 1),
#   swiftspec:d2:graft (4 of 7: --limit 1). compare.md: lossless yes.
# Commands (commits 02c4544, then 022c978 from the graft rows on, which record the grafts):
#   bash paper_figures/graft_cpu.sh paper_figures/results/2026-11-30-cpu-qwen-pair-graft
# and, to have grafted recordings for the GPU replay sooner, before its graft steps:
COMMON="--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --max-new-tokens 64 --chain-k 7
        --tree-w 8 --tree-bs 8 --device cpu --dtype float32 --data-dir ../shared/datasets/eagle
        --out paper_figures/results/2026-11-30-cpu-qwen-pair-graft"
swiftspec-bench run $COMMON --limit 1 --systems swiftspec --draft-steps 3 --graft ngram
swiftspec-bench run $COMMON --limit 1 --systems swiftspec --draft-steps 2 --graft ngram
swiftspec-bench compare paper_figures/results/2026-11-30-cpu-qwen-pair-graft --format markdown > compare.md
# Third session (10:52-13:20 UTC; each row names the commit it ran at, this session's b4f47a4..; the queue was
# reordered and restarted a few times, each restart resuming): the same script,
#   bash paper_figures/graft_cpu.sh paper_figures/results/2026-11-30-cpu-qwen-pair-graft
# finished swiftspec:d2:graft and swiftspec:d3:graft (14 each), the -bs12 and -bs16 folders (ar and
# swiftspec:d3:graft, 7 each), tree and tree:graft (14 each), swiftspec:dD:graft for D = 4..8
# (7 each). compare.md regenerated at the end: lossless yes.
