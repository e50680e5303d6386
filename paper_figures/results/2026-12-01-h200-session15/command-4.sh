#!/usr/bin/env bash
# Fifteenth session, call 4 (nvidia-h200; NOTES v89): 32 warps an SM in the AWQ GEMM (w32.patch,
# a probe at M <= 8) against base (this commit): kernel rows (70B,
# TP 1, M = 1 and 8, back to back) base / w32 / base / w32; the 70B AWQ forward (M = 8, context
# 1000, PDL on) base / w32 / base / w32.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base w32; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/; done
(cd /tmp/w32 && patch -s -p1 < $HERE/w32.patch) && grep -c "AWQ_THREADS 1024" /tmp/base/cuda/awq_gemm.cu /tmp/w32/cuda/awq_gemm.cu > $O/copies.log
cat $O/copies.log
kernels() {  # kernels TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 1,8 \
      --ops awq_gemm --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "kernels $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,5,6,8 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
(cd /tmp/w32 && timeout -k 5 120 python3 -c "
import torch
from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import awq_gemm, awq_gemm_reference, awq_swiglu, plan
from swiftspec_core.kernels.norm import swiglu
torch.manual_seed(0)
for n, k in [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]:
    w = random_awq(n, k); x = torch.randn(8, k, device='cuda', dtype=torch.bfloat16)
    out = torch.full((8, n), float('nan'), device='cuda', dtype=torch.bfloat16); awq_gemm(x, w, out=out)
    ref = awq_gemm_reference(x, w).float(); err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
    one = awq_gemm(x[3:4].contiguous(), w)
    sw = awq_swiglu(x, w) if n == 57344 else None
    print(n, k, plan(n, k, 128, 132), 'max rel err %.2e' % err, 'row 3 at M=1 bitwise', torch.equal(one[0], out[3]),
          'swiglu bitwise', None if sw is None else torch.equal(sw, swiglu(out)), 'nan', out.isnan().any().item())
") > $O/check-w32.log 2>&1; echo "w32 check exit $?"; cat $O/check-w32.log
kernels base a; kernels w32 a; kernels base b; kernels w32 b
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2-5 | tr '\n' ' '; echo
}
profile base a; profile w32 a; profile base b; profile w32 b
cd $OUT && tar czf all.tgz c4
