#!/usr/bin/env bash
# Call 3 of the twentieth session (nvidia-h200): the qkv GEMM lets the attention launch once its
# blocks have passed their PDL wait (early.patch = branch qkv-early; NOTES v123). Its GPU tests
# (the GEMM kernels' new argument, the fused forwards and decoders exact), forward rows (8B, 1B:
# forward and draft_step) base / early / early / base, then the timeline of early (the attention's
# lead and adds against c1's / session19 c3's). ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session20
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + early.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base early; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/early && patch -s -p1 < $HERE/early.patch) && echo "early: $(grep -c early_dependents /tmp/early/cuda/gemm_tile.cuh) lines"
(cd /tmp/early && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py tests/test_gpu_fused.py \
    tests/test_fused_forward.py > $O/gpu-tests-early.log 2>&1)
echo "early tests: exit $? $(tail -1 $O/gpu-tests-early.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-early.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run early a; run early b; run base b
(cd /tmp/early && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models llama-3-8b,llama-3.2-1b \
    --csv $O/timeline-early.csv --blocks $O/blocks-early.csv > $O/timeline-early.md 2> $O/timeline-early.log)
echo "timeline early exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (norm|qkv|attention|o|gate_up|down) " $O/timeline-early.md
cd $OUT && tar czf all.tgz c3
