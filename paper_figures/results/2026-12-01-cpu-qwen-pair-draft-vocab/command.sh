#!/usr/bin/env bash
# The real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this 2-core CPU: accepted tokens a round with the
# draft's vocabulary cut to its first N token ids (graft_probe.py --draft-vocabs; NOTES v103), at the
# replay sources' settings (bs 8, w 8, grafting, d = 3 and the serial tree), 6 datasets x 1 prompt
# + mt_bench's second turn, 64 tokens; every output checked against ar's.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-qwen-pair-draft-vocab}
python3 paper_figures/graft_probe.py --target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 1 \
    --tokens 64 --draft-steps 3 --grafts ngram --draft-vocabs full,65536,32768 --tree-bs 8 --tree-w 8 \
    --data-dir ${DATA_DIR:-../shared/datasets/eagle} > $OUT/probe.md 2> $OUT/probe.log
