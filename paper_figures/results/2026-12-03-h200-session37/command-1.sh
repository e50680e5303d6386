#!/usr/bin/env bash
# Prepared in session 36 as session36/command-3.sh (not run there), run in session 37 as call 1 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session37/command-1.sh
# (NOTES v222, v224): call 1's torch-set 1B folders (c1/torch, results.csv only: a run resumes from it) resumed, so lossless_gpu.sh (SHARED=1, now one
# configuration at a time across processes) goes on where call 1's budget stopped: chain@tp2,
# tree@tp2 and swiftspec@1+1, draft = target first, then the perturbed draft.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
mkdir -p "$OUT/c1"
python3 -m pip install -q --no-deps -e . > "$OUT/c1/pip.log" 2>&1
cp -r paper_figures/results/2026-12-03-h200-session36/c1/torch "$OUT/c1/torch"
start=$(date +%s)
SHARED=1 KERNELS=torch MODELS=llama-3.2-1b LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S:-430} \
  bash paper_figures/lossless_gpu.sh "$OUT/c1/torch" > "$OUT/c1/torch.txt" 2>&1
echo "torch llama-3.2-1b: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c1/torch.txt"
tail -n 16 "$OUT/c1/torch.txt"
grep -h "skipped" "$OUT"/c1/torch/*.log | head -4
rm -f "$OUT"/c1/*/*/results.parquet
cd "$OUT" && tar czf c1.tgz c1 && rm -rf c1
