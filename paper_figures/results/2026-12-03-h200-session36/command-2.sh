#!/usr/bin/env bash
# Session 36, call 2 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session36/command-2.sh
# (NOTES v221). The AWQ GEMM at M > 8 (the r16 kernels a bs-12 or bs-16 tree verification runs):
# 1. GPU tests of the change (x of the next chunk prefetched into L1 at M > 8).
# 2. Kernel rows, 70B TP 1, awq_gemm, M = 8 / 12 / 16, of trees that differ only in the r16 path
#    (timing only where outputs are wrong): base (no prefetch, as before), pf (this commit), xnone
#    (base, x a constant: no x loads), nomma8 (base without rows 8..15's mma's), then pf and base again.
# 3. The 70B AWQ forward at width 12, base / pf, if time is left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_cuda_compile.py \
    > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
variant() {  # variant KIND: a copy of the packages under /tmp/KIND with the AWQ block's r16 path changed
  rm -rf /tmp/$1; mkdir -p /tmp/$1; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/$1/
  local cu=/tmp/$1/cuda/awq_gemm_block.cuh
  [ "$1" = pf ] || sed -i '/if (kTwo \&\& n + 1 < chunks) {  \/\/ chunk n + 1/,+4d' $cu   # every other: no prefetch
  case $1 in
    xnone) sed -i 's/^    return load16_l1(x_bytes + (group \* (kChunks \* 64) + 64 \* p + row));$/    return make_uint4(0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u);/' $cu ;;
    nomma8) sed -i -e '/^          if (kTwo) mma_awq<kF16>(sums\[j\]\[1\], a\[0\], a\[1\], a\[2\], a\[3\], b8, b9);$/d' \
                   -e '/^        if (kTwo) mma_awq<kF16>(x_sums\[1\], ones, ones, ones, ones, b8, b9);$/d' $cu ;;
  esac
  echo "== $1: $(diff $ROOT/cuda/awq_gemm_block.cuh $cu | grep -c '^[<>]') lines differ from this commit's"
}
for v in base pf xnone nomma8; do variant $v; done
kernels() {  # kernels KIND RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8,12,16 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,5,6 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
kernels base a; kernels pf a; kernels xnone a; kernels nomma8 a; kernels pf b; kernels base b
profile() {  # profile KIND RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 70 python3 paper_figures/profile_forward.py --width 12 \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|attention|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2,4,5,6 | tr -s ' ' | tr '\n' ';'; echo
}
if (( $(date +%s) - START < 400 )); then profile base a; profile pf a; fi
cd $OUT && tar czf c2.tgz c2
