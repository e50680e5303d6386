#!/usr/bin/env bash
# Session 48, call 2 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session48/command-2.sh
# (NOTES v268): call 1's whole-suite run was cut at 23% by its time limit with one failure, the
# 327th test collected (on the CPU's collection: test_checkpoint_parts.py's
# test_cli_real_checkpoint_over_tp2_is_lossless). That file again with its failures' text, then the
# GPU test files one pytest each (a file's log survives another's time-out), while time is left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
for f in test_checkpoint_parts test_gpu_fused test_kernel_awq_gemm test_awq_norms test_kernel_attention test_kernel_gemm \
         test_kernel_gemm_norm test_kernel_gemm_swiglu test_kernel_norm test_kernel_topk test_fused_forward \
         test_persistent_target test_persistent_forward test_random_awq test_kernel_awq_dequantize test_models; do
  left=$(( 540 - ($(date +%s) - START) )); [ $left -gt 40 ] || { echo "$f: not run (time)"; continue; }
  timeout -k 5 $left python3 -m pytest -q -rfE --tb=short --durations=5 -p no:cacheprovider tests/$f.py > $O/$f.log 2>&1
  echo "$f: exit $? $(grep -E '(passed|failed|error)' $O/$f.log | tail -1) ($(( $(date +%s) - START )) s)"
  grep -E "^(FAILED|ERROR)" $O/$f.log | head -5
done
cd "$OUT" && tar czf c2.tgz c2 && rm -rf c2
