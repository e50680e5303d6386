#!/usr/bin/env bash
# Fourteenth session, call 8 (nvidia-h200; NOTES v80): the AWQ GEMM's x loads without L1 allocation.
# Call 7's counters: x's L1 hit rate is ~0% on o and down (one block an SM: no reuse) and 25-28% on
# qkv and gate_up, the same with 4 KB or 2 KB of accumulators, while the smaller carveout ran
# 6-10% faster. A/B in the 70B AWQ forward (M = 8, context 1000, PDL on), order new, noalloc, new,
# noalloc; noalloc: a copy whose load16_l1 (awq_common.cuh) is ld.global.nc.L1::no_allocate; and the
# AWQ kernel rows (70B, M = 8) of both.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c8; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
rm -rf /tmp/noalloc; mkdir -p /tmp/noalloc; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/noalloc/
sed -i 's/ld.global.nc.v4.u32 {%0, %1, %2, %3}, \[%4\];/ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];/' /tmp/noalloc/cuda/awq_common.cuh
grep -n "ld.global" /tmp/noalloc/cuda/awq_common.cuh > $O/copies.log; cat $O/copies.log
profile() {  # profile DIR NAME RUN
  (cd $1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2-$3.csv > $O/profile-$2-$3.md 2> $O/profile-$2-$3.log)
  echo "profile $2 ($3) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2-$3.md)"
}
profile $ROOT new a; profile /tmp/noalloc noalloc a; profile $ROOT new b; profile /tmp/noalloc noalloc b
for t in new:$ROOT noalloc:/tmp/noalloc; do
  (cd ${t#*:} && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/kernels-${t%%:*} > $O/kernels-${t%%:*}.log 2>&1)
  echo "kernels ${t%%:*} exit $?"; grep -E "^\| awq" $O/kernels-${t%%:*}/kernels.md | cut -c1-100
done
cd $OUT && tar czf all.tgz c8
