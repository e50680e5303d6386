#!/usr/bin/env bash
# Part 2 of next-h200.sh (written in the twenty-first; not run; NOTES v132, v133): the attention
# with its tree rows' first step loaded before the PDL wait and stored after the loads that follow
# it (attn-reorder.patch = branch attn-reorder), and the attention triggering o only from its
# mergers, once they merge (attn-trigger-merge.patch); the same bits either way. In patched
# copies: GPU tests (reorder: attention and fused decoders; mtrig: attention), forward rows base /
# reorder / mtrig / mtrig / reorder / base, reorder's trace at M = 9, mtrig's 1B timeline. ~4.5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session21
O=$OUT/reorder; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + attn-reorder.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base reorder mtrig; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/reorder && patch -s -p1 < $HERE/attn-reorder.patch) && echo "reorder: $(grep -c tree_store /tmp/reorder/cuda/attention.cu) lines"
(cd /tmp/mtrig && patch -s -p1 < $HERE/attn-trigger-merge.patch) && echo "mtrig: $(grep -c 'NOTES v133' /tmp/mtrig/cuda/attention.cu) line"
(cd /tmp/reorder && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-reorder.log 2>&1)
echo "reorder tests: exit $? $(tail -1 $O/gpu-tests-reorder.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-reorder.log | head -5
(cd /tmp/mtrig && timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py > $O/gpu-tests-mtrig.log 2>&1)
echo "mtrig tests: exit $? $(tail -1 $O/gpu-tests-mtrig.log) ($(( $(date +%s) - START )) s)"
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run reorder a; run mtrig a; run mtrig b; run reorder b; run base b
(cd /tmp/reorder && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/attention_trace.py --models llama-3-8b,llama-3.2-1b --m 9 \
    > $O/trace-m9.md 2> $O/trace-m9.log)
echo "trace reorder M = 9: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(first start|\| start -> staged)" $O/trace-m9.md
(cd /tmp/mtrig && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    --csv $O/timeline-mtrig.csv --blocks $O/blocks-mtrig.csv > $O/timeline-mtrig.md 2> $O/timeline-mtrig.log)
echo "timeline mtrig exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-mtrig.md | cut -d'|' -f2-8,13 | head -5
cd $OUT && tar czf reorder.tgz reorder
