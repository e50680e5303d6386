#!/usr/bin/env bash
# Call 5 of the seventeenth session (nvidia-h200; NOTES v108): the 70B AWQ qkv GEMM without clusters
# (c1only.patch: plan() over C = 1 only; of the 70B TP1 shapes only qkv changes, (4, 4) -> (11, 1),
# launched with PDL) against this commit: the 70B AWQ forward, base first and last; the AWQ GEMM
# kernel rows at M = 8 for both.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session17
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base c1only; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/c1only && patch -s -p1 < $HERE/c1only.patch) && grep -n "^CLUSTERS" /tmp/c1only/swiftspec_core/kernels/awq_gemm.py
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile base a; profile c1only a; profile c1only b; profile base b
for v in base c1only; do
  (cd /tmp/$v && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/awq-$v > $O/awq-$v.log 2>&1)
  echo "awq rows $v exit $? ($(( $(date +%s) - START )) s): $(grep -E "^awq" $O/awq-$v/kernels.csv | cut -d, -f1,2,4,7,9 | tr '\n' ' ')"
done
cd $OUT && tar czf all.tgz c5
