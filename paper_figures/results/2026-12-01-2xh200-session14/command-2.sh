#!/usr/bin/env bash
# Fourteenth session, call 2 (NOTES v74; nvidia-h200: x2 was no longer lent, so issue 11's pair
# waits): the AWQ gate_up with SwiGLU in its epilogue, and the r8 AWQ kernels' accumulators at half
# the shared memory.
# 1) The AWQ GEMM's GPU tests (awq_swiglu bitwise swiglu(awq_gemm) on every target's gate_up, every
#    launch shape; the fused AWQ engine) and the gemm_swiglu / fused-forward tests, on this commit.
# 2) The 70B AWQ forward (M = 8, context 1000, PDL on) of three trees, each in its own processes:
#    new (this commit), base (copy: forward._awq_swiglu as before and 8 accumulator pieces a lane at
#    r8, i.e. 6ffe00a's AWQ path) and swiglu4k (copy: the fused epilogue with 8 pieces at r8); in
#    the order new, base, swiglu4k, new, base; then new with PDL off. The AWQ kernel rows (70B,
#    M = 1 and 8, back to back) of new and base.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
copy() {  # copy DIR: the tree's packages with 8 accumulator pieces a lane at r8
  rm -rf $1; mkdir -p $1; cp -r swiftspec_core swiftspec_bench paper_figures cuda $1/
  sed -i 's/static constexpr int kPieces = kTwo ? 8 : 4;/static constexpr int kPieces = 8;/' $1/cuda/awq_gemm.cu
  sed -i 's/^ACCUMULATOR_BYTES_R8 = 32 \* 16 \* 4 /ACCUMULATOR_BYTES_R8 = 32 * 32 * 4 /' $1/swiftspec_core/kernels/awq_gemm.py
}
copy /tmp/base; copy /tmp/swiglu4k
sed -i 's/^    return awq_swiglu(x, weight_of(p))$/    return swiglu(awq_gemm(x, weight_of(p)))/; s/^from .norm import add_rmsnorm, rmsnorm$/from .norm import add_rmsnorm, rmsnorm, swiglu/' \
    /tmp/base/swiftspec_core/kernels/forward.py
grep -n "kPieces =\|^ACCUMULATOR_BYTES_R8\|swiglu" /tmp/base/cuda/awq_gemm.cu /tmp/base/swiftspec_core/kernels/awq_gemm.py \
    /tmp/base/swiftspec_core/kernels/forward.py /tmp/swiglu4k/swiftspec_core/kernels/forward.py | grep -v "^.*://" > $O/copies.log
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_kernel_gemm_swiglu.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
profile() {  # profile DIR NAME PDL RUN
  (cd $1 && SWIFTSPEC_PDL=$3 PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2-pdl$3-$4.csv > $O/profile-$2-pdl$3-$4.md 2> $O/profile-$2-pdl$3-$4.log)
  echo "profile $2 PDL $3 ($4) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2-pdl$3-$4.md)"
  grep -E "^\| (gate_up|down|o|qkv) " $O/profile-$2-pdl$3-$4.md | cut -d'|' -f2-5
}
profile $ROOT new 1 a; profile /tmp/base base 1 a; profile /tmp/swiglu4k swiglu4k 1 a; profile $ROOT new 1 b
profile /tmp/base base 1 b; profile $ROOT new 0 a
for t in new:$ROOT base:/tmp/base; do
  (cd ${t#*:} && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 1,8 \
      --ops awq_gemm --impl ours --out $O/kernels-${t%%:*} > $O/kernels-${t%%:*}.log 2>&1)
  echo "kernels ${t%%:*} exit $?"; grep -E "^\| awq" $O/kernels-${t%%:*}/kernels.md | cut -c1-100
done
cd $OUT && tar czf all.tgz c2
