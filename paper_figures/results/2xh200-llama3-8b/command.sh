#!/usr/bin/env bash
# The two device calls (nvidia-h200-x2) that made this folder's rows; RUN is $OUT/run on the device,
# seeded with this folder's results for the second call so that it resumed.
# Call A (commit 6ef0dc8):
bash paper_figures/run_2xh200.sh "$RUN" 440 "10 --systems ar" "1 --systems hf-ar --datasets gsm8k,humaneval" \
    "5 --systems ar --tp 2"
# Call B (commit 41616c6): the deadline ran out inside swiftspec (56 of 70 queries); tree and chain did not run.
bash paper_figures/run_2xh200.sh "$RUN" 285 "10 --systems swiftspec --split 1+1" "5 --systems tree --tp 2" \
    "5 --systems chain --tp 2"
# Then, here: swiftspec-bench compare/plot paper_figures/results/2xh200-llama3-8b
