#!/usr/bin/env bash
# Session 40, call 4 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session40/command-4.sh
# (NOTES v238). Call 3's memory stages of the AWQ Llama-3-70B under fused kernels again, after
# engine_of_shard(consume=True): the engine build's peak should drop from 75 GB to about its 40.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
START=$(date +%s); O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
PYTHONPATH=. timeout -k 5 170 python3 paper_figures/memory_stages.py llama-3-70b --quant awq --kernels fused > $O/stages-fused.log 2>&1
echo "== fused: exit $? ($(( $(date +%s) - START )) s)"; grep -E "allocated|Error|error" $O/stages-fused.log | tail -8
cd "$OUT" && tar czf c4.tgz c4 && rm -rf c4
