#!/usr/bin/env bash
# Session 37, call 2 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session37/command-2.sh
# (NOTES v225). Issue 11's "every decoder lossless against ar with the same weights, draft = target":
# session 36's c4 pass again, now that draft = target under --quant awq is the AWQ target's
# dequantized twin (it accepts nearly every token, so long accepted paths go through the AWQ
# kernels), fused kernels, bf16, real acceptance: the one-process systems at the 1B and 8B shapes,
# then (SHARED=1: ranks take turns on the one GPU, times void) the 1B's across-process systems into
# the same folders: chain@tp2 and tree@tp2 on the AWQ target sharded over 2 ranks (the AWQ GEMM fused
# with the LL all-reduce), swiftspec@1+1.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
mkdir -p "$OUT/c2"
python3 -m pip install -q --no-deps -e . > "$OUT/c2/pip.log" 2>&1
start=$(date +%s)
QUANT=awq KERNELS=fused MODELS="llama-3.2-1b llama-3-8b" LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S1:-200} \
  bash paper_figures/lossless_gpu.sh "$OUT/c2/awq" > "$OUT/c2/awq.txt" 2>&1
echo "awq one process: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c2/awq.txt"
tail -n 8 "$OUT/c2/awq.txt"
start=$(date +%s)
SHARED=1 QUANT=awq KERNELS=fused MODELS="llama-3.2-1b" LIMIT=2 MAX_NEW=64 BUDGET_S=${BUDGET_S2:-300} \
  bash paper_figures/lossless_gpu.sh "$OUT/c2/awq" > "$OUT/c2/awq-shared.txt" 2>&1
echo "awq 1B across processes (SHARED): exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c2/awq-shared.txt"
tail -n 12 "$OUT/c2/awq-shared.txt"
python3 - "$OUT/c2/awq" <<'PY' | tee "$OUT/c2/accepted.txt"
# Mean accepted tokens a round per folder and system: the twin should accept nearly every token.
import sys, pathlib, pandas as pd
for f in sorted(pathlib.Path(sys.argv[1]).glob("*/results.csv")):
    d = pd.read_csv(f)
    print(f.parent.name, d.groupby("system")["mean_accepted"].mean().round(2).to_dict())
PY
grep -h "skipped\|^error" "$OUT"/c2/awq/*.log | head -4
rm -f "$OUT"/c2/*/*/results.parquet
cd "$OUT" && tar czf c2.tgz c2 && rm -rf c2
