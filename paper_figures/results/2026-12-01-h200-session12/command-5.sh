#!/usr/bin/env bash
# Twelfth session, call 5 (nvidia-h200): call 3's norm GEMMs again (norm weights copied to shared
# memory) against the norm kernels, both on one GPU (NOTES v59): the GEMM-norm and attention GPU
# tests, then profile_forward.py for 1B and 8B with each layer body, PDL off (each kernel's own
# time) and on (the replay).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm_norm.py tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
for pdl in 0 1; do
  for body in gemms kernels; do
    flag=""; [ $body = kernels ] && flag="--norm-kernels"
    SWIFTSPEC_PDL=$pdl PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
        --models llama-3.2-1b,llama-3-8b $flag --csv $O/profile-pdl$pdl-$body.csv > $O/profile-pdl$pdl-$body.md 2> $O/profile-pdl$pdl-$body.log
    echo "profile pdl $pdl $body exit $? ($(( $(date +%s) - START )) s)"
    grep -E "^(llama|\| (norm|qkv|o|gate_up|down|attention|append_kv|lm_head))" $O/profile-pdl$pdl-$body.md | cut -c1-150
  done
done
cd $OUT && tar czf all.tgz c5
