#!/usr/bin/env bash
# Ran in session 33 as call 1 (nvidia-h200, commit 8fca9d1, 109 s of command time, cold machine):
#   SWIFTSPEC_COMMIT=8fca9d1 bash command-1.sh; then tar of $OUT/ctx -> c1/
# Prepared in session 32, not run: for a session with one H200 (no carry). Does the context move the
# persistent target build's crossover width against our fused forward (kernel_choice.
# PERSISTENT_TARGET_WIDTH = 8)? End to end (c2) the target build was 1.3% slower a round at width
# 12 with 256-token answers, where the kernels table at context 1000 (session 31's s4) had the two
# even; as an 8B draft at width 15 (c5, 64-token answers) it was 2.7% faster. The 8B forward rows,
# ours and persistent, at widths 1, 8, 12, 16 and contexts 300, 600, 1000, 1600, one process, graph
# replays (~6 min). If persistent is faster at 12 below some context and slower above it, the rule
# could take the run's longest context too; if it is slower at 12 everywhere, s4's even row was a
# draw.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/ctx; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
# The forward rows take the largest --context only: one call a context, into one folder (rows kept).
for c in 300 600 1000 1600; do
  timeout -k 5 $(( 560 - ($(date +%s) - START) )) python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 \
      --m 1,8,12,16 --context $c --ops forward --impl ours,persistent --out $O/kernels >> $O/kernels.log 2>&1
  echo "context $c: exit $? ($(( $(date +%s) - START )) s)"
done
grep -E "^\| forward" $O/kernels/kernels.md | cut -c1-120
