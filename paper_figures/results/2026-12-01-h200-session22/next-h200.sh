#!/usr/bin/env bash
# The next session's first call on one H200 (written in the twenty-second; NOTES v136): the early
# merge (early-merge.patch = branch early-merge): the by-position merger folds the other chunks'
# partials with its idle warps while its item warps work, and the merge's arithmetic fixed by the
# query's last chunk. Never run on a GPU when written: its GPU tests come first. In a patched copy:
# GPU tests (attention with the new protocol cases, fused decoders exact), rows base / early /
# early / base (attention, forward and draft step, 8B and 1B at M = 8), the early trace at M = 8
# and 9, the early 1B timeline at width 9. ~4 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session22
O=$OUT/early; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + early-merge.patch (early) / without it (base), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base early; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/early && patch -s -p1 < $HERE/early-merge.patch) && echo "early: $(grep -c merge_early /tmp/early/cuda/attention.cu) merge_early lines"
(cd /tmp/early && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-early.log 2>&1)
echo "early tests: exit $? $(tail -1 $O/gpu-tests-early.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-early.log | head -8
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops attention,forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (attention|forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run early a; run early b; run base b
for m in 8 9; do
  (cd /tmp/early && PYTHONPATH=. timeout -k 5 40 python3 paper_figures/attention_trace.py --models llama-3-8b,llama-3.2-1b --m $m \
      > $O/trace-early-m$m.md 2> $O/trace-early-m$m.log)
  echo "trace early M = $m: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^(first start|\| items done \||\| merge done \|)" $O/trace-early-m$m.md
done
(cd /tmp/early && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    --csv $O/timeline-early.csv > $O/timeline-early.md 2> $O/timeline-early.log)
echo "timeline early exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-early.md | cut -d'|' -f2-8,13 | head -5
cd $OUT && tar czf early.tgz early
