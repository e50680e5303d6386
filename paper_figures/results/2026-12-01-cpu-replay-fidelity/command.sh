#!/usr/bin/env bash
# Replay fidelity (CPU, NOTES v81): does replayed acceptance reproduce the recorded tokens a round?
# The recordings: the real Qwen pair, fp32 CPU, lockstep, grafting, bs 8
# (results/2026-11-30-cpu-qwen-pair-graft: swiftspec d = 3 on 14 queries, d = 4 and 6 on 7, tree
# on 14). The replays: tiny-llama shapes (random weights; the replay draws each round's emitted
# length from the recording and takes it along the replayed tree's best path, so a shallower path
# cuts it), 5 datasets x 10 prompts (sum's prompts exceed tiny-llama's context), 128 tokens:
# swiftspec lockstep at d = 3, 4, 6, swiftspec --split 1+1 at d = 3 (over gloo), and tree; then
# tree_shapes.py counts, round by round, how often the replayed tree's best path cut the drawn length.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-replay-fidelity}
SRC=$(mktemp -d)
PYTHONPATH=. python3 paper_figures/replay_union.py $SRC paper_figures/results/2026-11-30-cpu-qwen-pair-graft \
    paper_figures/results/cpu-qwen-pair > $OUT/replay.log
COMMON=(--target tiny-llama --draft tiny-llama --weights random --device cpu --dtype float32
        --acceptance replay:$SRC --datasets gsm8k,qa,humaneval,mt_bench,alpaca --limit 10 --max-new-tokens 128
        --tree-bs 8 --tree-w 8 --data-dir ${DATA_DIR:-../shared/datasets/eagle} --graft ngram)
for d in 3 4 6; do
  python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps $d --out $OUT/lockstep > $OUT/run.log 2>&1 || exit 2
done
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree --out $OUT/lockstep >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --split 1+1 --draft-steps 3 --out $OUT/split \
    >> $OUT/run.log 2>&1 || exit 2
# Where replay cuts: each round's drawn and emitted lengths and the sent best path
# (paper_figures/tree_shapes.py), 4 prompts a dataset; the last line without grafting (replayed from
# the recording without it).
for s in "swiftspec --draft-steps 3" "tree" "swiftspec --draft-steps 3 --graft off"; do
  set -- $s
  PYTHONPATH=. python3 paper_figures/tree_shapes.py "$*" run "${COMMON[@]}" --limit 4 --systems $s --out $(mktemp -d) \
      2>> $OUT/run.log | tail -1
done > $OUT/caps.md
{ echo "# Replayed (tiny-llama shapes)"; python3 paper_figures/acceptance_report.py $OUT/lockstep | sed -n 1,12p
  python3 paper_figures/acceptance_report.py $OUT/split | sed -n 1,12p
  echo; echo "# Recorded (the real Qwen pair, CPU, lockstep)"
  python3 paper_figures/acceptance_report.py paper_figures/results/2026-11-30-cpu-qwen-pair-graft | sed -n 1,12p
} > $OUT/fidelity.md
rm -rf $SRC
