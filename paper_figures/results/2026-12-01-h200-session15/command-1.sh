#!/usr/bin/env bash
# Fifteenth session, call 1 (nvidia-h200; NOTES v86): what bounds the AWQ GEMM at M = 8. Kernel rows
# (70B, TP 1, M = 8, back to back) of six trees, each a copy of this commit's packages with one
# change, in its own process: base; copyonly (no ldmatrix / dequantization / mma); computeonly (no
# copies of codes); stages8 / stages2 (AWQ_STAGES and awq_gemm.STAGES); early4 (early4.patch: 4 of
# 4 stages in flight); then the 70B AWQ forward (M = 8, context 1000, PDL on) of base, early4,
# stages8, base; then early4's AWQ GPU tests at M <= 8.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
variant() {  # variant DIR KIND: this commit's packages with one change to the AWQ GEMM
  rm -rf $1; mkdir -p $1; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests $1/
  local cu=$1/cuda/awq_gemm.cu py=$1/swiftspec_core/kernels/awq_gemm.py
  case $2 in
    copyonly) sed -i 's/^      for (int h = 0; h < 2; ++h) {$/      for (int h = 0; h < 0; ++h) {/' $cu ;;
    computeonly) sed -i 's/^    copy16(stage + c.copy_dst, copy_group + 1024 \* p);$/    if (K < 0) copy16(stage + c.copy_dst, copy_group + 1024 * p);/; s/^    copy16(stage + copy_dst16(c.copy_dst), copy_group + 1024 \* p + 512);$/    if (K < 0) copy16(stage + copy_dst16(c.copy_dst), copy_group + 1024 * p + 512);/' $cu ;;
    stages8|stages2) sed -i "s/^#define AWQ_STAGES 4 /#define AWQ_STAGES ${2#stages} /" $cu
                     sed -i "s/^STAGES = 4 /STAGES = ${2#stages} /" $py ;;
    early4) (cd $1 && patch -s -p1 < $HERE/early4.patch) ;;
  esac
  echo "== $2"; (cd $1 && git diff --no-index --stat $ROOT/cuda cuda; git diff --no-index -U0 $ROOT/swiftspec_core swiftspec_core | grep "^[-+][A-Z]") 2>&1 | tail -4
  (cd $1 && python3 -c "
from swiftspec_core.kernels.awq_gemm import plan
print('plans (S, C):', {p: plan(n, k, 128, 132) for p, (n, k) in
      dict(qkv=(10240, 8192), o=(8192, 8192), gate_up=(57344, 8192), down=(8192, 28672)).items()})")
}
for v in base copyonly computeonly stages8 stages2 early4; do variant /tmp/$v $v; done > $O/copies.log 2>&1
cat $O/copies.log | grep -v "^ \|^$" | head -30
kernels() {  # kernels KIND RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
kernels base a; kernels copyonly a; kernels computeonly a; kernels stages8 a; kernels stages2 a; kernels early4 a; kernels base b
profile() {  # profile KIND RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2-5 | tr '\n' ' '; echo
}
profile base a; profile early4 a; profile stages8 a; profile base b
(cd /tmp/early4 && timeout -k 5 150 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py \
    -k "matches_reference or launch_shape or invariant or graph_replay or swiglu" > $O/gpu-tests-early4.log 2>&1)
echo "early4 tests: exit $? $(tail -1 $O/gpu-tests-early4.log) ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf all.tgz c1
