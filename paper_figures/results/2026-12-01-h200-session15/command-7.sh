#!/usr/bin/env bash
# Fifteenth session, call 7 (nvidia-h200; NOTES v92): the AWQ GEMM's nibble shifts on the ALU pipe
# (pipes.sh: prmt2, prmt2shf1) against base: outputs bitwise against base on the four 70B shapes
# (M = 8); kernel rows (70B, TP 1, M = 8) base / prmt2 / prmt2shf1 / base; the 70B AWQ forward
# (M = 8, context 1000, PDL on) base / prmt2 / prmt2shf1.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c7; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
source $HERE/pipes.sh
for v in base prmt2 prmt2shf1; do pipes /tmp/$v $v; done > $O/copies.log 2>&1
for v in base prmt2 prmt2shf1; do
  (cd /tmp/$v && timeout -k 5 120 python3 -c "
import torch
from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import awq_gemm, awq_swiglu
outs = {}
for n, k in [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]:
    torch.manual_seed(n + k); w = random_awq(n, k); x = torch.randn(8, k, device='cuda', dtype=torch.bfloat16)
    outs[(n, k)] = awq_gemm(x, w).cpu()
    if n == 57344: outs['swiglu'] = awq_swiglu(x, w).cpu()
torch.save(outs, '$O/out-$v.pt')
print('$v saved')") >> $O/check.log 2>&1
done
python3 -c "
import torch
base = torch.load('$O/out-base.pt')
for v in ('prmt2', 'prmt2shf1'):
    o = torch.load(f'$O/out-{v}.pt'); print(v, 'bitwise base on', {str(k): torch.equal(o[k], base[k]) for k in base})" >> $O/check.log 2>&1
rm -f $O/out-*.pt; cat $O/check.log
kernels() {  # kernels TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
kernels base a; kernels prmt2 a; kernels prmt2shf1 a; kernels base b
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2-5 | tr '\n' ' '; echo
}
profile base a; profile prmt2 a; profile prmt2shf1 a
cd $OUT && tar czf all.tgz c7
