#!/usr/bin/env bash
# Call 5 of the twentieth session (nvidia-h200): the attention reads its tree rows' positions two
# elements a step, their loads together (pairs.patch = branch tree-rows-pairs; NOTES v125). Its GPU
# tests (the attention's; the fused decoders exact), attention rows (8B, 1B; M = 8, 9, 12, 16;
# context 1000) and forward rows (8B at M = 8 and 12, the 1B's draft step) base / new / new / base;
# then on the base tree (main, with merge-rounds landed) test_bench_run.py (the csv read's round
# trip, fixed in the nineteenth session after failing on this machine's pandas). ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session20
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + pairs.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base new; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/new && patch -s -p1 < $HERE/pairs.patch) && echo "new: $(grep -c 'eb_in' /tmp/new/cuda/attention.cu) lines"
(cd /tmp/new && timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    > $O/gpu-tests-new.log 2>&1)
echo "new tests: exit $? $(tail -1 $O/gpu-tests-new.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-new.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8,9,12,16 --context 1000 --ops attention --impl ours --out $O/attn-$1-$2 > $O/attn-$1-$2.log 2>&1
   PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8,12 --context 1000 \
      --ops forward --impl ours --out $O/fwd-$1-$2 > $O/fwd-$1-$2.log 2>&1
   PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 --context 1000 \
      --ops draft_step --impl ours --out $O/step-$1-$2 > $O/step-$1-$2.log 2>&1)
  echo "$1 ($2) ($(( $(date +%s) - START )) s): $(cat $O/attn-$1-$2/kernels.md $O/fwd-$1-$2/kernels.md $O/step-$1-$2/kernels.md \
      | grep -E "^\| (attention|forward|draft_step) " | cut -d'|' -f2,3,5,7 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run new a; run new b; run base b
(cd /tmp/base && timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_bench_run.py > $O/gpu-tests-bench-run.log 2>&1)
echo "base test_bench_run: exit $? $(tail -1 $O/gpu-tests-bench-run.log) ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf all.tgz c5
