#!/usr/bin/env bash
# Fifteenth session, call 3 (nvidia-h200; NOTES v88): x three chunks ahead in the AWQ GEMM (x3.patch,
# branch x-ahead) against base (this commit without it): the AWQ GPU tests on x3; kernel rows (70B,
# TP 1, M = 1 and 8, back to back) base / x3 / base / x3; the 70B AWQ forward (M = 8, context
# 1000, PDL on) base / x3 / base / x3; ncu stall samples of x3's down.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base x3; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/; done
(cd /tmp/x3 && patch -s -p1 < $HERE/x3.patch) && grep -c "kAhead" /tmp/base/cuda/awq_gemm.cu /tmp/x3/cuda/awq_gemm.cu > $O/copies.log
cat $O/copies.log
(cd /tmp/x3 && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-x3.log 2>&1)
echo "x3 tests: exit $? $(tail -1 $O/gpu-tests-x3.log) ($(( $(date +%s) - START )) s)"
kernels() {  # kernels TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 1,8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,5,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
kernels base a; kernels x3 a; kernels base b; kernels x3 b
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2-5 | tr '\n' ' '; echo
}
profile base a; profile x3 a; profile base b; profile x3 b
(cd /tmp/x3 && PYTHONPATH=. timeout -k 5 120 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 \
    --launch-count 1 --section WarpStateStats --section SourceCounters -o $O/x3-down python3 paper_figures/profile_awq.py 8192 28672 8) > $O/x3-down.log 2>&1
ncu -i $O/x3-down.ncu-rep --page details --print-details all > $O/x3-down-details.txt 2>&1
ncu -i $O/x3-down.ncu-rep --page source --csv --print-source sass > $O/x3-down-sass.csv 2>&1
grep -E "Issued Warp|Stall Long|Warp Cycles Per Issued" $O/x3-down-details.txt | head -3
rm -f $O/*.ncu-rep; cd $OUT && tar czf all.tgz c3
