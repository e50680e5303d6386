#!/usr/bin/env bash
# Thirteenth session, call 6 (nvidia-h200): the fused MLP (cuda/mlp.cu; NOTES v71). The fused-MLP,
# GEMM, norm-GEMM, fused-forward and fused-decoder GPU tests; then the forward / draft_step rows
# (8B, 3B, 1B, M = 8) with the fused MLP (on), without it (off: forward.py's two MLP lines set back
# by sed to gemm_swiglu then gemm), and on again.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_mlp.py tests/test_kernel_gemm.py \
    tests/test_kernel_gemm_swiglu.py tests/test_kernel_gemm_norm.py tests/test_fused_forward.py tests/test_gpu_fused.py \
    > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
variant() {  # $1: label; the tree is set up for it
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --tp 1 \
      --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1 > $O/kernels-$1.log 2>&1
  echo "$1 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (forward|draft_step)" $O/kernels-$1/kernels.md | cut -c1-90
}
cp swiftspec_core/kernels/forward.py /tmp/forward.py
variant on
sed -i 's/^    mlp = fused_mlp if group.size == 1 and a.quant != "awq" else /    mlp = /' swiftspec_core/kernels/forward.py
sed -i 's/^        fused_mlp(h, layer.w_gate_up, layer.w_down, norm=(layer.mlp_norm, a.norm_eps), residual=h, out=h)$/        gemm(gemm_swiglu(h, layer.w_gate_up, norm=(layer.mlp_norm, a.norm_eps)), layer.w_down, residual=h, out=h)/' swiftspec_core/kernels/forward.py
grep -c "fused_mlp(" swiftspec_core/kernels/forward.py
variant off
cp /tmp/forward.py swiftspec_core/kernels/forward.py
variant on2
cd $OUT && tar czf all.tgz c6
