#!/usr/bin/env bash
# Fourteenth session, call 5 (nvidia-h200; NOTES v77): the fused losslessness pass at this commit on
# one GPU (the last one ran at 4d9861f, NOTES v16; the GEMM plans, the norms inside the GEMMs, the
# attention and lm_head's split have changed since): Llama-3.2-1B and Llama-3-8B shapes, random
# bf16 weights, real acceptance, draft = target and target + 1% noise, gsm8k / qa / humaneval x 2
# prompts, 64 tokens; ar, chain, tree, swiftspec (lockstep) and hf-ar, grafting off and on. The TP 2
# and --split 1+1 systems need two GPUs (x2 not lent).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
KERNELS=fused GRAFTS="off ngram" BUDGET_S=${BUDGET_S:-330} DATA_DIR=$PWD/.data/eagle \
    bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless_gpu.sh exit $?"; tail -30 $O/lossless.log
grep -h "skipped" $O/lossless/*.log | head
cd $OUT && tar czf all.tgz c5
