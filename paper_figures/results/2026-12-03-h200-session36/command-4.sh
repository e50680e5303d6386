#!/usr/bin/env bash
# Session 36, call 4 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session36/command-4.sh
# (NOTES v223). Issue 11's "every decoder lossless against ar with the same weights": the
# losslessness pass with the target's layers in INT4 AWQ (QUANT=awq: random weights RTN-quantized,
# the draft its bf16 twin, and that twin perturbed), fused kernels, bf16, real acceptance, the
# one-process systems (ar, chain, tree, swiftspec) at the 1B and 8B shapes.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
mkdir -p "$OUT/c4"
python3 -m pip install -q --no-deps -e . > "$OUT/c4/pip.log" 2>&1
start=$(date +%s)
QUANT=awq KERNELS=fused MODELS="llama-3.2-1b llama-3-8b" LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S:-200} \
  bash paper_figures/lossless_gpu.sh "$OUT/c4/awq" > "$OUT/c4/awq.txt" 2>&1
echo "awq: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c4/awq.txt"
tail -n 12 "$OUT/c4/awq.txt"
grep -h "skipped\|^error" "$OUT"/c4/awq/*.log | head -4
rm -f "$OUT"/c4/*/*/results.parquet
cd "$OUT" && tar czf c4.tgz c4 && rm -rf c4
