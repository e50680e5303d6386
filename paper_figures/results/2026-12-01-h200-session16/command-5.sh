#!/usr/bin/env bash
# Sixteenth session, call 5 (nvidia-h200; NOTES v100): the landing commit of the append inside the
# attention and the bf16 GEMMs' late triggers: GPU tests, forward / draft_step rows, the ablation.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 230 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    tests/test_kernel_gemm.py tests/test_kernel_gemm_norm.py tests/test_kernel_gemm_swiglu.py \
    "tests/test_kernel_awq_gemm.py::test_fused_awq_engine_is_close_to_torch_and_lossless" > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
PYTHONPATH=. timeout -k 5 80 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "forward exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
for mw in "llama-3-8b 8" "llama-3.2-1b 9"; do
  set -- $mw
  PYTHONPATH=. timeout -k 5 100 python3 paper_figures/forward_ablation.py --models $1 --width $2 --rounds 1 \
      --csv $O/ablation-$1-w$2.csv > $O/ablation-$1-w$2.md 2> $O/ablation-$1-w$2.log
  echo "ablation $1 width $2 exit $? ($(( $(date +%s) - START )) s)"; cat $O/ablation-$1-w$2.md
done
cd $OUT && tar czf all.tgz c5
