#!/usr/bin/env bash
# Session 38, call 3 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session38/command-3.sh
# (NOTES v229). Call 1's across-process perturbed halves ran out of budget (tree@tp2 5 / 1 of 6,
# swiftspec@1+1 none): resume its committed folders (one process and the finished rows are kept)
# with more of the call for the AWQ part.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-03-h200-session38  # call 1's folders, resumed
mkdir -p "$OUT/c3"
python3 -m pip install -q --no-deps -e . > "$OUT/c3/pip.log" 2>&1
for kind in torch awq; do
  mkdir -p "$OUT/c3/$kind" && cp -r "$HERE/c1/$kind/llama-3.2-1b-noise" "$OUT/c3/$kind/"
  ls "$OUT/c3/$kind/llama-3.2-1b-noise/results.parquet" || { echo "error: $kind's rows did not travel"; exit 2; }
done
start=$(date +%s)
SHARED=1 DRAFTS=noise KERNELS=torch MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S1:-210} \
  bash paper_figures/lossless_gpu.sh "$OUT/c3/torch" > "$OUT/c3/torch.txt" 2>&1
echo "torch 1B noise: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c3/torch.txt"
tail -n 9 "$OUT/c3/torch.txt"
start=$(date +%s)
SHARED=1 DRAFTS=noise QUANT=awq KERNELS=fused MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S2:-330} \
  bash paper_figures/lossless_gpu.sh "$OUT/c3/awq" > "$OUT/c3/awq.txt" 2>&1
echo "awq 1B noise: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c3/awq.txt"
tail -n 9 "$OUT/c3/awq.txt"
grep -h "skipped\|^error" "$OUT"/c3/*/*.log | head -4
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
