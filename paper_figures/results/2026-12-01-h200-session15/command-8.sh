#!/usr/bin/env bash
# Fifteenth session, call 8 (nvidia-h200; NOTES v93): the landing commit (the nibble shifts split
# over two pipes): its AWQ GPU tests, kernel rows (70B, TP 1, M = 1 and 8) and forward
# (M = 8, context 1000, PDL on); beside it shf3 (pipes.sh: j = 3 a shift too), kernel rows and
# forward. (test_kernel_awq_gemm.py holds the fused AWQ engine test; test_gpu_fused.py not run.)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c8; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
source $HERE/pipes.sh
for v in new shf3; do pipes /tmp/$v $v; done > $O/copies.log 2>&1
timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
kernels() {  # kernels TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 1,8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,5,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
kernels new a; kernels shf3 a; profile new a; profile shf3 a
cd $OUT && tar czf all.tgz c8
