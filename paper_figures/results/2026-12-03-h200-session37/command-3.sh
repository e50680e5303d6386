#!/usr/bin/env bash
# Session 37, call 3 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session37/command-3.sh
# (NOTES v226). The perturbed-draft halves that calls 1 and 2 left to the budget, on the 1B across
# processes under SHARED=1 (ranks take turns on the one GPU, times void): chain@tp2, tree@tp2 and
# swiftspec@1+1 with --draft-noise 0.01, under the torch kernel set (call 1's folders resumed) and
# with the AWQ target under fused kernels (call 2's folders resumed).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-03-h200-session37
mkdir -p "$OUT/c3"
python3 -m pip install -q --no-deps -e . > "$OUT/c3/pip.log" 2>&1
cp -r "$HERE/c1/torch" "$OUT/c3/torch"
cp -r "$HERE/c2/awq" "$OUT/c3/awq"
start=$(date +%s)
SHARED=1 KERNELS=torch MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S1:-280} \
  bash paper_figures/lossless_gpu.sh "$OUT/c3/torch" > "$OUT/c3/torch.txt" 2>&1
echo "torch 1B: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c3/torch.txt"
tail -n 6 "$OUT/c3/torch.txt"
start=$(date +%s)
SHARED=1 QUANT=awq KERNELS=fused MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S2:-250} \
  bash paper_figures/lossless_gpu.sh "$OUT/c3/awq" > "$OUT/c3/awq.txt" 2>&1
echo "awq 1B: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c3/awq.txt"
tail -n 6 "$OUT/c3/awq.txt"
grep -h "skipped\|^error" "$OUT"/c3/*/*.log | head -4
rm -f "$OUT"/c3/*/*/results.parquet
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
