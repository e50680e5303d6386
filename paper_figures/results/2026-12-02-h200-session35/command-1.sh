#!/usr/bin/env bash
# Session 35, call 1 (nvidia-h200, one GPU): two ranks on one GPU, one process each, time-sliced
# (SWIFTSPEC_TEST_SHARED_GPU=1; own processes, gloo, no NCCL): the LL all-reduce's test, the bf16
# fused GEMM + all-reduce's cases, and the new AWQ GEMM + all-reduce's. Run from the repo root by
# the device tool: bash paper_figures/results/2026-12-02-h200-session35/command-1.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT/c1"
nvidia-smi --query-gpu=name,compute_mode --format=csv > "$OUT/c1/gpu.txt" 2>&1
python3 -m pip install -q --no-deps -e . > "$OUT/c1/pip.log" 2>&1
for t in "test_kernel_allreduce.py -k ll_allreduce_two_gpus" "test_kernel_gemm_allreduce.py -k two_ranks" \
         "test_kernel_awq_allreduce.py"; do
  name=$(echo "$t" | cut -d. -f1)
  start=$(date +%s)
  SWIFTSPEC_TEST_SHARED_GPU=1 timeout 240 python3 -m pytest -x -s -q tests/$t > "$OUT/c1/$name.log" 2>&1
  echo "rc $? in $(( $(date +%s) - start )) s" >> "$OUT/c1/$name.log"
  echo "== $t"; grep -E "passed|failed|error|FAIL|raised|rc " "$OUT/c1/$name.log" | head -12
done
cat "$OUT/c1/gpu.txt"
