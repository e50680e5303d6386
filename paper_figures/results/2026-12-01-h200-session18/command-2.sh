#!/usr/bin/env bash
# Call 2 of the eighteenth session (nvidia-h200; NOTES v112): the L2 prefetch probe, then the
# attention's non-merging blocks prefetching o_proj's weights as they leave (pf.patch = branch
# attn-prefetch): its GPU tests, forward rows 8B / 1B base / pf / pf / base, the 70B AWQ forward
# base / pf / pf / base.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session18
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/l2_prefetch_probe.py --mib 8,32 > $O/probe.md 2> $O/probe.log
echo "probe exit $? ($(( $(date +%s) - START )) s)"; cat $O/probe.md
for v in base pf; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/pf && patch -s -p1 < $HERE/pf.patch) && grep -c prefetch_share /tmp/pf/cuda/attention.cu
(cd /tmp/pf && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-pf.log 2>&1)
echo "pf tests: exit $? $(tail -1 $O/gpu-tests-pf.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-pf.log | head -5
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward pf a; forward pf b; forward base b
profile() {  # profile TREE RUN MODEL QUANT
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models $3 --quant $4 --csv $O/profile-$3-$1-$2.csv > $O/profile-$3-$1-$2.md 2> $O/profile-$3-$1-$2.log)
  echo "profile $3 $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$3-$1-$2.md)"
  grep -E "^\| (attention|o) " $O/profile-$3-$1-$2.md
}
profile base a llama-3-70b awq; profile pf a llama-3-70b awq; profile pf b llama-3-70b awq; profile base b llama-3-70b awq
profile base a llama-3-8b none; profile pf a llama-3-8b none
cd $OUT && tar czf all.tgz c2
