#!/usr/bin/env bash
# Issue "Disaggregated multi-GPU runtime": the benchmark on nvidia-h200-x2 (2x H200, NVLink), commit 4b94bc6.
# Llama-3-8B-Instruct / Llama-3.2-1B-Instruct shapes, random bf16 weights, acceptance replayed from
# paper_figures/results/cpu-qwen-pair (real Qwen2.5-Coder pair on CPU), six datasets x 10 prompts
# (MT-bench: 2 turns, so 70 queries), 256 new tokens, tree bs 8 / w 8, chain k 7.
# RUN is $OUT/run on the device; the second call was seeded with this folder's rows and resumed.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SWIFTSPEC_COMMIT=4b94bc6
# Call A (log-call-a.txt; it began with profile_split.py and bench_forward.py, see profile-split-v6.log):
bash paper_figures/run_2xh200.sh "$RUN" 440 "10 --systems swiftspec --split 1+1" "10 --systems tree --tp 2" \
    "10 --systems ar" "10 --systems ar --tp 2"
# Call B (log-call-b.txt): ar@tp2 resumed its last 2 queries.
bash paper_figures/run_2xh200.sh "$RUN" 470 "10 --systems chain --tp 2" \
    "10 --systems swiftspec --split 1+1 --draft-steps 3" "1 --systems hf-ar --datasets gsm8k,humaneval" \
    "10 --systems ar --tp 2"
# Then, here:
swiftspec-bench compare paper_figures/results/2026-11-30-2xh200 --format markdown > compare.md
swiftspec-bench plot paper_figures/results/2026-11-30-2xh200
