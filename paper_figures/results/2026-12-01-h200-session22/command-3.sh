#!/usr/bin/env bash
# Call 3 of the twenty-second session (NOTES v134): the attention's mergers chosen by position in
# one wave, waiting on sentinel-filled partials instead of a ticket (merge-by-position.patch, the
# working tree of this call; base = the same tree with the patch reversed). GPU tests of the new
# tree (attention, fused decoders exact), rows base / new / new / base (attention, forward and draft
# step, 8B and 1B at M = 8), the new attention's trace at M = 8 and 9, its 1B timeline. ~4 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session22
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + merge-by-position.patch (new) / without it (base), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base new; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/base && patch -s -R -p1 < $HERE/merge-by-position.patch) && echo "base: $(grep -c by_position /tmp/base/cuda/attention.cu) by_position lines, new: $(grep -c by_position /tmp/new/cuda/attention.cu)"
(cd /tmp/new && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-new.log 2>&1)
echo "new tests: exit $? $(tail -1 $O/gpu-tests-new.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-new.log | head -8
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops attention,forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (attention|forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run new a; run new b; run base b
for m in 8 9; do
  (cd /tmp/new && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --models llama-3-8b,llama-3.2-1b --m $m \
      > $O/trace-new-m$m.md 2> $O/trace-new-m$m.log)
  echo "trace new M = $m: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(first start|\| items done -> ticket|\| merge start -> merge summed)" $O/trace-new-m$m.md
done
(cd /tmp/new && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    --csv $O/timeline-new.csv > $O/timeline-new.md 2> $O/timeline-new.log)
echo "timeline new exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-new.md | cut -d'|' -f2-8,13 | head -5
cd $OUT && tar czf c3.tgz c3
