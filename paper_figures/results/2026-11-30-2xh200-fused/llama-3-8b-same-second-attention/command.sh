#!/usr/bin/env bash
# Issue 10: the fused pass's missing Llama-3-8B rows across two processes, with the second attention
# kernel (device tool, nvidia-h200-x2, 2026-11-30 10:23 and 10:26 UTC, working tree at a1d7feb; the
# rows' commit column says cc57ff1 because SWIFTSPEC_COMMIT was not exported and the device's copy
# answered git with a stale HEAD). Draft = target, bf16, real acceptance, 64 tokens, gsm8k/qa/humaneval x 2.
A="--target llama-3-8b --draft llama-3-8b --weights random --device cuda --dtype bfloat16 --datasets gsm8k,qa,humaneval
   --limit 2 --max-new-tokens 64 --data-dir .data/eagle --kernels fused"
python3 -m swiftspec_bench.cli run $A --systems ar,tree,swiftspec --tp 2 --split 1+1 --out tp2
python3 -m swiftspec_bench.cli run $A --systems ar,swiftspec --split 1+1 --out tp1-and-split
# Together (lossless.check over both folders' rows): ar:fused 6/6 identical; swiftspec@1+1:fused
# 12/12 identical to ar:fused; tree@tp2:fused 6/6 identical to ar@tp2:fused; ar@tp2:fused parts
# from ar:fused on 6/6 (placement). Held against the first call's ar:fused rows (first attention
# kernel) instead, swiftspec@1+1:fused showed 6 near-ties: two kernel versions round apart.
