#!/usr/bin/env bash
# Issue 8 item 2: the losslessness pass on nvidia-h200-x2 (2x H200), bf16, random weights at the
# Llama-3.2-1B and Llama-3-8B shapes, REAL acceptance, gsm8k/qa/humaneval x 2 prompts, 64 new tokens;
# draft = target (same preset and seed: identical weights) and draft = target + 1% relative noise
# (--draft-noise 0.01). Every system: ar, chain, tree, swiftspec (lockstep), hf-ar (draft = target
# only), then ar/chain/tree --tp 2 and swiftspec --split 1+1 into the same folder.
# .data/eagle holds copies of ../shared/datasets/eagle/{gsm8k,qa,humaneval}.jsonl (not committed).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Device call 1 (commit 3429fdd; device-log-1b.txt, env.txt): the 1B shape.
SWIFTSPEC_COMMIT=3429fdd TESTS_S=200 BUDGET_S=300 MODELS=llama-3.2-1b bash paper_figures/gpu_check.sh $OUT
# Device call 3 (commit a053c67; device-log-8b.txt): the 8B shape (the rows' code paths are those of
# 3429fdd plus the capture fix in graphs.py).
SWIFTSPEC_COMMIT=a053c67 TESTS=0 MODELS=llama-3-8b BUDGET_S=270 bash paper_figures/gpu_check.sh $OUT
# Then here, at the commit that added this folder: compare with the check as it now stands (the
# device logs' verdicts came from the earlier near-tie rules; see NOTES.md "Losslessness on GPU").
for c in llama-3.2-1b-same llama-3.2-1b-noise llama-3-8b-same llama-3-8b-noise; do
  swiftspec-bench compare paper_figures/results/2026-11-30-2xh200-lossless/$c --format markdown \
      > paper_figures/results/2026-11-30-2xh200-lossless/$c/compare.md
done
# summary.md: lossless.check over the four folders (the table at the end of lossless_gpu.sh).
