#!/usr/bin/env bash
# Twelfth session, call 7 (nvidia-h200): the two one-GPU layer bodies (norms inside the GEMMs, norm
# kernels) on Llama-3.2-3B and Qwen2.5-Coder-1.5B / 0.5B, PDL on, each twice (NOTES v61).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c7; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for run in 1 2; do
  for body in gemms kernels; do
    flag=""; [ $body = kernels ] && flag="--norm-kernels"
    PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
        --models llama-3.2-3b,qwen2.5-coder-1.5b,qwen2.5-coder-0.5b $flag > $O/profile-$body-$run.md 2> $O/profile-$body-$run.log
    echo "profile $body $run exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(llama|qwen)" $O/profile-$body-$run.md | cut -c1-150
  done
done
cd $OUT && tar czf all.tgz c7
