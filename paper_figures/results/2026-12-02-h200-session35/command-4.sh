#!/usr/bin/env bash
# Session 35, call 4 (nvidia-h200, one GPU; carry .data): the losslessness pass's other cells on the
# one GPU (SHARED=1: --tp 2 over PeerGroup, --split 1+1), real acceptance, draft = target and
# perturbed: the 1B shape under the torch kernel set (issue 10: its divergences, if any, counted),
# then the 8B shape under fused. Run from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-02-h200-session35/command-4.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:-unknown}
mkdir -p "$OUT/c4"
python3 -m pip install -q --no-deps -e . > "$OUT/c4/pip.log" 2>&1
for cell in "torch llama-3.2-1b ${B1:-270}" "fused llama-3-8b ${B2:-270}"; do
  set -- $cell
  start=$(date +%s)
  SHARED=1 KERNELS=$1 MODELS=$2 LIMIT=2 MAX_NEW=64 BUDGET_S=$3 \
    bash paper_figures/lossless_gpu.sh "$OUT/c4/$1" > "$OUT/c4/$1.txt" 2>&1
  echo "$1 $2: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c4/$1.txt"
  tail -n 16 "$OUT/c4/$1.txt"
  grep -h "skipped" "$OUT"/c4/$1/*.log | head -4
done
rm -f "$OUT"/c4/*/*/results.parquet
cd "$OUT" && tar czf c4.tgz c4 && rm -rf c4
