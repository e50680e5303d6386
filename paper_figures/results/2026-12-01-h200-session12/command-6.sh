#!/usr/bin/env bash
# Twelfth session, call 6 (nvidia-h200): the one-GPU forward with the final norm back as a kernel
# (lm_head a plain GEMM) against the norm-kernel body, PDL on, interleaved twice (NOTES v60); the
# fused forward and decoder GPU tests; the kernel table's forward / draft_step rows.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py tests/test_fused_forward.py \
    > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
for run in 1 2; do
  for body in gemms kernels; do
    flag=""; [ $body = kernels ] && flag="--norm-kernels"
    PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py --models llama-3.2-1b,llama-3-8b $flag \
        --csv $O/profile-$body-$run.csv > $O/profile-$body-$run.md 2> $O/profile-$body-$run.log
    echo "profile $body $run exit $? ($(( $(date +%s) - START )) s)"; grep -E "^llama" $O/profile-$body-$run.md | cut -c1-150
  done
done
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf all.tgz c6
