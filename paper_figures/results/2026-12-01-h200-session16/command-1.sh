#!/usr/bin/env bash
# Sixteenth session, call 1 (nvidia-h200; NOTES v97): where the fused forward's time goes with PDL
# on (forward_ablation.py: each op's marginal cost, 8B at width 8, 1B at width 9 as a draft step),
# and the bf16 GEMMs prefetching their rows into L2 while they wait for the kernel before (pf.patch:
# PF_BYTES 4 KB and 16 KB a row past the first group), forward / draft_step rows, base first and last.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session16
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
ablation() {  # ablation MODEL WIDTH
  PYTHONPATH=. timeout -k 5 170 python3 paper_figures/forward_ablation.py --models $1 --width $2 \
      --csv $O/ablation-$1-w$2.csv > $O/ablation-$1-w$2.md 2> $O/ablation-$1-w$2.log
  echo "ablation $1 width $2 exit $? ($(( $(date +%s) - START )) s)"; cat $O/ablation-$1-w$2.md
}
ablation llama-3-8b 8
ablation llama-3.2-1b 9
for v in base pf4k pf16k; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/pf4k && patch -s -p1 < $HERE/pf.patch) && (cd /tmp/pf16k && patch -s -p1 < $HERE/pf.patch \
  && sed -i 's/^#define PF_BYTES 4096/#define PF_BYTES 16384/' cuda/gemm_tile.cuh)
grep -c "PF_BYTES 4096\|PF_BYTES 16384" /tmp/{base,pf4k,pf16k}/cuda/gemm_tile.cuh
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward pf4k a; forward pf16k a; forward base b; forward pf4k b; forward pf16k b
cd $OUT && tar czf all.tgz c1
