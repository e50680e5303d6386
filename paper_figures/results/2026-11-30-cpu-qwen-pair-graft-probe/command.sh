#!/usr/bin/env bash
# Issue 9: chain grafting on the real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this project's CPU
# machine (2 cores), commit b26cc18: one prompt of each dataset (7 turns), 64 new tokens,
# swiftspec lockstep at d = 3, then d = 2 (commit 9bed45f, same code paths), and serial tree, each with --graft off and ngram (bs 8, w 8,
# graft length 6, n-grams 3 then 2). Every output equals ar's. The ms_per_step column is not a
# speed result: other test runs shared the two cores during it. The full folder (2 prompts
# each, through swiftspec-bench run) is still to do.
PYTHONPATH=. python3 paper_figures/graft_probe.py --target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b \
    --datasets all --limit 1 --tokens 64 --draft-steps 3 --data-dir ../shared/datasets/eagle > probe-d3.md
PYTHONPATH=. python3 paper_figures/graft_probe.py --target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b \
    --datasets all --limit 1 --tokens 64 --draft-steps 2 --data-dir ../shared/datasets/eagle > probe-d2.md
