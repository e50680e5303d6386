#!/usr/bin/env bash
# Call 6 of the twenty-third session (NOTES v141): the 1B's gate_up (the norm GEMM gemm_swiglu_norm)
# launched without PDL (gate-up-no-pdl.patch: nopdl). In a patched copy: its GPU tests (gemm_swiglu,
# the fused decoders exact), rows base / nopdl / nopdl / base (1B forward and draft step, 8B forward
# as a control: its gate_up is the plain kernel, untouched), nopdl's 1B timeline at width 9. ~4 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session23
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (+ gate-up-no-pdl.patch for nopdl), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base nopdl; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/nopdl && patch -s -p1 < $HERE/gate-up-no-pdl.patch) && echo "patched"
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b,llama-3-8b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run nopdl a; run nopdl b; run base b
(cd /tmp/nopdl && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    --csv $O/timeline-nopdl.csv > $O/timeline-nopdl.md 2> $O/timeline-nopdl.log)
echo "timeline nopdl exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (place|qkv|attention|o|gate_up|down) \|" $O/timeline-nopdl.md | cut -d'|' -f2-14
(cd /tmp/nopdl && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm_swiglu.py \
    tests/test_gpu_fused.py > $O/gpu-tests-nopdl.log 2>&1)
echo "nopdl tests: exit $? $(tail -1 $O/gpu-tests-nopdl.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-nopdl.log | head -8
