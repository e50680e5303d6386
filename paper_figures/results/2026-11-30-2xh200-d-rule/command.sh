#!/usr/bin/env bash
# A check of the rounded d rule (draft_steps_for), nvidia-h200-x2, commit c8b54b3: the split workers'
# warm-up measured d = 3 (floor had measured 2 in 2026-11-30-2xh200). Not a speed result: at this commit a
# replayed run with a measured d drew acceptance from the recordings of every d (2 and 3 pooled); fixed in
# the next commit (the draws now follow the measured d).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 SWIFTSPEC_COMMIT=c8b54b3
bash paper_figures/run_2xh200.sh "$RUN" 170 "2 --systems swiftspec --split 1+1 --datasets gsm8k,qa"
