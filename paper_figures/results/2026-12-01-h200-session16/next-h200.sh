#!/usr/bin/env bash
# For the next session with one H200 (written in the sixteenth; not run; NOTES "For the next
# session"): the late PDL trigger in the AWQ GEMM (awq-late.patch, as the bf16 GEMMs got in v99),
# and whether the append inside the attention costs the AWQ forward what it cost nothing at 8B
# (to-base-c6.patch: the append a kernel again). The 70B AWQ forward (profile_forward.py --quant
# awq, PDL on) for: this commit, + awq-late, with the append a kernel; twice, this commit first
# and last; the AWQ GPU tests on awq-late. Then append-order.patch (the append's code in
# attention_append.cuh, issued after the tile's loads, its cache stores after the barrier: in
# this commit's SASS the append's loads and global stores come before the tile's loads, which
# the stores may alias): the attention and fused-decoder GPU tests on it, and forward /
# draft_step rows (8B, 1B) of this commit and it, twice.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session16
O=$OUT/next; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base awqlate appendkernel order; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/awqlate && patch -s -p1 < $HERE/awq-late.patch) && (cd /tmp/appendkernel && patch -s -p1 < $HERE/to-base-c6.patch)
(cd /tmp/order && patch -s -p1 < $HERE/append-order.patch) && ls /tmp/order/cuda/attention_append.cuh
grep -c "pdl_trigger();" /tmp/{base,awqlate,appendkernel}/cuda/awq_gemm.cu
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile base a; profile awqlate a; profile appendkernel a; profile base b; profile awqlate b; profile appendkernel b
profile base c
(cd /tmp/awqlate && timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py \
    > $O/gpu-tests-awqlate.log 2>&1)
echo "awqlate tests: exit $? $(tail -1 $O/gpu-tests-awqlate.log) ($(( $(date +%s) - START )) s)"
(cd /tmp/order && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-order.log 2>&1)
echo "order tests: exit $? $(tail -1 $O/gpu-tests-order.log) ($(( $(date +%s) - START )) s)"
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward order a; forward base b; forward order b
cd $OUT && tar czf all.tgz next
