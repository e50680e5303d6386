#!/usr/bin/env bash
# Issue 9 on the real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this project's 2-core CPU machine:
#   1. OUT (bs 8): ar; swiftspec lockstep at d = 2 and 3 and serial tree, each with --graft off and
#      ngram; 6 datasets x 2 prompts (14 queries), 64 new tokens. compare checks losslessness.
#   2. OUT-bs12, OUT-bs16: ar and swiftspec d = 3 with grafting, 1 prompt each (7 queries): the
#      verification budget's accepted tokens (tree_bs is a run setting, so one folder each).
#   3. OUT: serial tree with and without grafting at 1 prompt each, swiftspec at d = 5, 6 with
#      grafting, the tree's second prompts, then d = 4, 7, 8 (1 prompt each: replay recordings for
#      GPU runs whose measured d is past 3; replay_source takes the nearest recorded d).
# Steps resume: rerunning the script skips finished rows. Accepted lengths and tokens are what
# these runs are for; their latencies shared the CPU with other work and are not speed results.
#   bash paper_figures/graft_cpu.sh OUT
set -uo pipefail
OUT=${1:?out dir}
COMMON=(--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --max-new-tokens 64
        --chain-k 7 --tree-w 8 --device cpu --dtype float32 --data-dir ../shared/datasets/eagle)
run() { echo "== $(date -u +%T) $*"; python3 -m swiftspec_bench.cli run "${COMMON[@]}" "$@"; echo "== exit $?"; }
run --out "$OUT" --tree-bs 8 --limit 2 --systems ar
for g in off ngram; do  # swiftspec first (the bound), each without grafting, then with
  for d in 2 3; do run --out "$OUT" --tree-bs 8 --limit 2 --systems swiftspec --draft-steps $d --graft $g; done
done
for bs in 12 16; do
  run --out "$OUT-bs$bs" --tree-bs $bs --limit 1 --systems ar
  run --out "$OUT-bs$bs" --tree-bs $bs --limit 1 --systems swiftspec --draft-steps 3 --graft ngram
done
# serial tree with and without grafting, and swiftspec with grafting at d = 5, 6, then the tree's
# second prompts, then d = 4, 7, 8 (replay recordings: replay_source takes the nearest recorded d)
for g in off ngram; do run --out "$OUT" --tree-bs 8 --limit 1 --systems tree --graft $g; done
for d in 5 6; do run --out "$OUT" --tree-bs 8 --limit 1 --systems swiftspec --draft-steps $d --graft ngram; done
for g in off ngram; do run --out "$OUT" --tree-bs 8 --limit 2 --systems tree --graft $g; done
for d in 4 7 8; do run --out "$OUT" --tree-bs 8 --limit 1 --systems swiftspec --draft-steps $d --graft ngram; done
