#!/usr/bin/env bash
# Session 38, call 1 (nvidia-h200, carry .data; session 37's next-h200-noise.sh), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session38/command-1.sh
# What call 3 (v226) meant to run: the perturbed-draft halves on the 1B across processes under
# SHARED=1 (times void): chain@tp2, tree@tp2, swiftspec@1+1 with --draft-noise 0.01, torch kernel
# set and the AWQ target under fused kernels. The folders of c3 (committed with results.parquet
# now) resume, so the one-process rows are not decoded again; DRAFTS=noise skips draft = target.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-03-h200-session37  # the folders resumed (c3)
mkdir -p "$OUT/c1"
python3 -m pip install -q --no-deps -e . > "$OUT/c1/pip.log" 2>&1
for kind in torch awq; do
  mkdir -p "$OUT/c1/$kind" && cp -r "$HERE/c3/$kind/llama-3.2-1b-noise" "$OUT/c1/$kind/"
  ls "$OUT/c1/$kind/llama-3.2-1b-noise/results.parquet" || { echo "error: $kind's rows did not travel"; exit 2; }
done
start=$(date +%s)
SHARED=1 DRAFTS=noise KERNELS=torch MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S1:-280} \
  bash paper_figures/lossless_gpu.sh "$OUT/c1/torch" > "$OUT/c1/torch.txt" 2>&1
echo "torch 1B noise: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c1/torch.txt"
tail -n 9 "$OUT/c1/torch.txt"
start=$(date +%s)
SHARED=1 DRAFTS=noise QUANT=awq KERNELS=fused MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S2:-250} \
  bash paper_figures/lossless_gpu.sh "$OUT/c1/awq" > "$OUT/c1/awq.txt" 2>&1
echo "awq 1B noise: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c1/awq.txt"
tail -n 9 "$OUT/c1/awq.txt"
grep -h "skipped\|^error" "$OUT"/c1/*/*.log | head -4
cd "$OUT" && tar czf c1.tgz c1 && rm -rf c1
