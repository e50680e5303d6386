#!/usr/bin/env bash
# Session 35, call 2 (nvidia-h200, one GPU; carry .data): swiftspec --split 1+1's two processes on
# one GPU (SWIFTSPEC_SHARED_GPU) with real acceptance in bf16 under fused kernels, held against ar:
# the losslessness pass with SHARED=1. Run from the repo root by the device tool:
#   bash paper_figures/results/2026-12-02-h200-session35/command-2.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:-unknown}
mkdir -p "$OUT/c2"
python3 -m pip install -q --no-deps -e . > "$OUT/c2/pip.log" 2>&1
start=$(date +%s)
SHARED=1 KERNELS=fused MODELS="llama-3.2-1b llama-3-8b" LIMIT=2 MAX_NEW=64 BUDGET_S=500 \
  bash paper_figures/lossless_gpu.sh "$OUT/c2/lossless" > "$OUT/c2/lossless.txt" 2>&1
echo "exit $? in $(( $(date +%s) - start )) s" >> "$OUT/c2/lossless.txt"
tail -n 30 "$OUT/c2/lossless.txt"
grep -h "note:\|^lossless\|error:" "$OUT"/c2/lossless/compare-*.txt | sort | uniq -c
rm -f "$OUT"/c2/lossless/*/results.parquet  # results.csv holds the same rows
cd "$OUT" && tar czf c2.tgz c2 && rm -rf c2
