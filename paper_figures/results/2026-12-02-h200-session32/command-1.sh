#!/usr/bin/env bash
# Session 32, call 1 (one H200), main's tree at the commit given plus the uncommitted persistent
# target in runs: (1) GPU tests at HEAD (forward.head_logits, shared by the fused and both persistent
# forwards since 335c56b, never on a GPU yet; chain / tree / swiftspec on a 1B-shaped persistent
# target); (2) losslessness under --kernels persistent with real acceptance, the Llama-3-8B shape
# (random weights, bf16): the target on the persistent kernel's target build, the draft = target and
# a perturbed draft, one configuration at a time (two 8B pairs with page images do not fit at once).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >> $O/env.log 2>&1
timeout -k 5 300 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu.py tests/test_persistent_target.py \
    tests/test_persistent_forward.py tests/test_gpu_fused.py tests/test_kernel_attention.py > $O/gpu-tests.log 2>&1
echo "GPU tests exit $? ($(( $(date +%s) - START )) s): $(tail -n 1 $O/gpu-tests.log)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
MODELS=llama-3-8b KERNELS=persistent AT_ONCE=1 BUDGET_S=$(( 570 - ($(date +%s) - START) )) \
    bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless exit $? ($(( $(date +%s) - START )) s)"; tail -n 12 $O/lossless.log | cut -c1-140
find $O -name results.parquet -delete
cd $OUT && tar czf c1.tgz c1
