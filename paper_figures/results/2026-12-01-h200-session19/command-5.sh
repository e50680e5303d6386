#!/usr/bin/env bash
# Call 5 of the nineteenth session (nvidia-h200; NOTES v118): two mergers at 16 query rows a block
# too (MERGE_SPLIT_ROWS 32 -> 16: the 8B and 1B at M = 8 and the draft step), where the timeline
# (c2, c3) puts a 4-6 us tail on the attention. The attention GPU tests with m16, then attention
# rows (8B, 1B; M 8, 16) and forward rows (8B, 1B: forward and draft_step) base / m16 / m16 / base.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base m16; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
sed -i 's/^MERGE_SPLIT_ROWS = 32\b/MERGE_SPLIT_ROWS = 16/' /tmp/m16/swiftspec_core/kernels/attention.py
echo "m16: $(grep '^MERGE_SPLIT_ROWS' /tmp/m16/swiftspec_core/kernels/attention.py)"
(cd /tmp/m16 && timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-m16.log 2>&1)
echo "m16 tests: exit $? $(tail -1 $O/gpu-tests-m16.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-m16.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8,16 --context 1000 --ops attention,forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (attention|forward|draft_step) " $O/kernels-$1-$2/kernels.md | grep " 1000 \|forward\|draft" | cut -d'|' -f2,3,5,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run m16 a; run m16 b; run base b
cd $OUT && tar czf all.tgz c5
