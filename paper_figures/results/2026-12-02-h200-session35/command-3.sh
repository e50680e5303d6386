#!/usr/bin/env bash
# Session 35, call 3 (nvidia-h200, one GPU; carry .data; at 67a16d3): (1) the own-process two-rank tests
# on the one GPU (LL all-reduce, PeerGroup, the GEMM + all-reduce kernels); (2) the losslessness pass on the 1B shape with the
# across-process part on the one GPU: ar, chain, tree at --tp 2 (PeerGroup) and swiftspec --split 1+1,
# fused kernels, real acceptance, draft = target and perturbed. Run from the repo root:
#   SWIFTSPEC_COMMIT=67a16d3 bash paper_figures/results/2026-12-02-h200-session35/command-3.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:-unknown}
mkdir -p "$OUT/c3"
python3 -m pip install -q --no-deps -e . > "$OUT/c3/pip.log" 2>&1
start=$(date +%s)
SWIFTSPEC_SHARED_GPU=1 timeout 240 python3 -m pytest -x -s -q tests/test_kernel_allreduce.py tests/test_kernel_gemm_allreduce.py \
  tests/test_kernel_awq_allreduce.py -k "two_gpus or peer_group or two_ranks" \
  > "$OUT/c3/tests.log" 2>&1
echo "tests rc $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/c3/tests.log"; grep -E "passed|failed|FAIL" "$OUT/c3/tests.log" | head
start=$(date +%s)
SHARED=1 KERNELS=fused MODELS="llama-3.2-1b" LIMIT=2 MAX_NEW=64 BUDGET_S=420 \
  bash paper_figures/lossless_gpu.sh "$OUT/c3/lossless" > "$OUT/c3/lossless.txt" 2>&1
echo "lossless exit $? in $(( $(date +%s) - start )) s" >> "$OUT/c3/lossless.txt"
tail -n 20 "$OUT/c3/lossless.txt"
grep -h "note:\|^lossless\|error:" "$OUT"/c3/lossless/compare-*.txt | sort | uniq -c
grep -h "^== \|skipped" "$OUT"/c3/lossless/*.log | tail -n 12
rm -f "$OUT"/c3/lossless/*/results.parquet
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
