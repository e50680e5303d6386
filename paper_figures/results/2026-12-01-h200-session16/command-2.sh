#!/usr/bin/env bash
# Sixteenth session, call 2 (nvidia-h200; NOTES v94): the fifteenth session's next-h200.sh as it was
# written ("Where the AWQ GEMM stands"), its patches read from the session15 folder: two AWQ GEMM candidates on top of this session's pipe split, alone and
# together, each bitwise checked against base on the four 70B shapes, then timed: shf3 (pipes.sh:
# j = 3's shift on the integer pipe too) and lds128 (lds128.patch: a group's 8 scale words in two
# 16-byte shared loads at M <= 8, not eight 4-byte ones; r8 76 registers, no spills). Kernel rows
# (70B, M = 8) and the 70B AWQ forward (PDL on), base first and last; the AWQ GPU tests on `both`.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c2; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
source $HERE/pipes.sh
{ pipes /tmp/base base; pipes /tmp/shf3 shf3; pipes /tmp/lds128 base; pipes /tmp/both shf3
  (cd /tmp/lds128 && patch -s -p1 < $HERE/lds128.patch) && (cd /tmp/both && patch -s -p1 < $HERE/lds128.patch); } > $O/copies.log 2>&1
grep -c "load_shared16_words\|shr.b32 %0, %1, 12" /tmp/{base,shf3,lds128,both}/cuda/awq_common.cuh | tee -a $O/copies.log
for v in base shf3 lds128 both; do
  (cd /tmp/$v && timeout -k 5 120 python3 -c "
import torch
from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import awq_gemm, awq_swiglu
outs = {}
for n, k in [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]:
    torch.manual_seed(n + k); w = random_awq(n, k); x = torch.randn(8, k, device='cuda', dtype=torch.bfloat16)
    outs[(n, k)] = awq_gemm(x, w).cpu()
    if n == 57344: outs['swiglu'] = awq_swiglu(x, w).cpu()
torch.save(outs, '$O/out-$v.pt')") >> $O/check.log 2>&1
done
python3 -c "
import torch
base = torch.load('$O/out-base.pt')
for v in ('shf3', 'lds128', 'both'):
    o = torch.load(f'$O/out-{v}.pt'); print(v, 'bitwise base on', {str(k): torch.equal(o[k], base[k]) for k in base})" >> $O/check.log 2>&1
rm -f $O/out-*.pt; cat $O/check.log
kernels() {  # kernels TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
kernels base a; kernels shf3 a; kernels lds128 a; kernels both a; kernels base b
profile base a; profile shf3 a; profile lds128 a; profile both a; profile base b; profile both b
(cd /tmp/both && timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-both.log 2>&1)
echo "both tests: exit $? $(tail -1 $O/gpu-tests-both.log) ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf all.tgz c2
