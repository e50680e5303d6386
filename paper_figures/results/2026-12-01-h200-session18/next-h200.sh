#!/usr/bin/env bash
# For the next session with one H200 (written in the eighteenth; not run; NOTES "For the next
# session (written at the end of the eighteenth)"). ~7 min.
# 1. The rest of the whole suite on the GPU machine (session18/c3 stopped at 493 of 896; c4 ran the
#    files after it but these): the two CLI files fixed to --device cpu that c4 did not finish, and
#    the GEMM kernel files.
# 2. v113's probe: how much of the AWQ GEMM's time at M = 8 is its x loads (1 KB of x a 1 KB chunk of
#    codes; down's x never fits L1): kernel rows (70B, TP 1, M = 8) of base, xfixed (every x load
#    reads chunk 0's x: L1 hits, wrong results), xnone (no x loads: constant x), base; then the 70B
#    AWQ forward base / xfixed / base. Timing only: the variants' outputs are wrong by design.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/next; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 240 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_bench_multiprocess.py tests/test_bench_run.py \
    tests/test_kernel_awq_gemm.py tests/test_kernel_gemm.py tests/test_kernel_gemm_norm.py tests/test_kernel_gemm_swiglu.py \
    > $O/suite-rest.log 2>&1
echo "suite rest: exit $? $(tail -1 $O/suite-rest.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/suite-rest.log | head -10
variant() {  # variant KIND: this commit's packages with the AWQ GEMM's x loads changed
  rm -rf /tmp/$1; mkdir -p /tmp/$1; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$1/
  local cu=/tmp/$1/cuda/awq_gemm.cu
  case $1 in
    xfixed) sed -i 's/^    x_next += p == kChunks - 1 ? x_group_step : 64;$/    x_next += 0 * (p == kChunks - 1 ? x_group_step : 64);/' $cu ;;
    xnone) sed -i 's/^    v = load16_l1(x_next);$/    v = make_uint4(0x3f803f80u, 0x3f803f80u, 0x3f803f80u, 0x3f803f80u);/' $cu ;;
  esac
  echo "== $1: $(diff $ROOT/cuda/awq_gemm.cu $cu | grep -c '^>') lines changed"
}
for v in base xfixed xnone; do variant $v; done
kernels() {  # kernels KIND RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
kernels base a; kernels xfixed a; kernels xnone a; kernels base b
profile() {  # profile KIND RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile base a; profile xfixed a; profile base b
cd $OUT && tar czf all.tgz next
