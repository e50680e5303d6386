#!/usr/bin/env bash
# Seventh session (CPU, fp32, the real Qwen pair): swiftspec d = 3 with grafting at bs 12, from
# branch propose-root (commit 9dc41a5: Drafter.propose takes one step only from a bare root and
# never grows a re-rooted tree to bs on the critical path; not merged), on the 14 queries of
# --limit 2. Against the same queries of results/2026-11-30-cpu-qwen-pair-graft-bs12 (main's
# propose, which grows to bs): pooled accepted a round 3.891 against 4.149 (-6.2%); lossless
# against that folder's ar rows on 14 of 14. NOTES v34.
# Run from a worktree of branch propose-root:
COMMON="--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --max-new-tokens 64 --chain-k 7
        --tree-w 8 --device cpu --dtype float32 --data-dir ../shared/datasets/eagle --tree-bs 12 --limit 2"
PYTHONPATH=. python3 -m swiftspec_bench.cli run $COMMON --systems swiftspec --draft-steps 3 --graft ngram \
    --out paper_figures/results/2026-11-30-cpu-qwen-pair-propose-root-bs12
