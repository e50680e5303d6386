#!/usr/bin/env bash
# Fourteenth session, call 3 (nvidia-h200; NOTES v75): two launch choices of the 70B AWQ forward,
# each from a copy of the tree, A/B'd in the forward (M = 8, context 1000, PDL on; order new, c1,
# g1, new, c1, g1):
#   c1: the AWQ GEMM without clusters (awq_gemm.CLUSTERS = (1,)): the 70B qkv, today (4, 4) in
#       clusters launched without PDL, takes plan()'s best one-block shape, launched with PDL;
#   g1: the tree attention in one query group (TQ = 8: 128 blocks of 8 busy warps) instead of two
#       (TQ = 4: 256 blocks, 4 of 8 warps with an item).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in c1 g1; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/$v/; done
sed -i 's/^CLUSTERS = (1, 2, 4, 8) /CLUSTERS = (1,) /' /tmp/c1/swiftspec_core/kernels/awq_gemm.py
sed -i 's/^    groups = max(1, min(T, resident \/\/ blocks_per_group))$/    groups = 1/' /tmp/g1/swiftspec_core/kernels/attention.py
grep -n "^CLUSTERS" /tmp/c1/swiftspec_core/kernels/awq_gemm.py > $O/copies.log
grep -n "    groups = " /tmp/g1/swiftspec_core/kernels/attention.py >> $O/copies.log
(cd /tmp/c1 && python3 -c "
from swiftspec_core.kernels.awq_gemm import plan
print('c1 plans, 70B TP 1:', {p: plan(n, k, 128, 132) for p, (n, k) in
      dict(qkv=(10240, 8192), o=(8192, 8192), gate_up=(57344, 8192), down=(8192, 28672)).items()})") >> $O/copies.log 2>&1
cat $O/copies.log
profile() {  # profile DIR NAME RUN
  (cd $1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2-$3.csv > $O/profile-$2-$3.md 2> $O/profile-$2-$3.log)
  echo "profile $2 ($3) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2-$3.md)"
  grep -E "^\| (qkv|attention|o) " $O/profile-$2-$3.md | cut -d'|' -f2-5
}
profile $ROOT new a; profile /tmp/c1 c1 a; profile /tmp/g1 g1 a
profile $ROOT new b; profile /tmp/c1 c1 b; profile /tmp/g1 g1 b
cd $OUT && tar czf all.tgz c3
