#!/usr/bin/env bash
# For the next session with one H200 (written in the twentieth; not run; NOTES v128): the GEMMs with
# a residual (the 1B's o and down) prefetch their tile's residual rows into L1 after the main loop
# (residual-prefetch.patch = branch residual-prefetch). Its GPU tests (the GEMM's residual in place,
# the fused forwards and decoders), forward rows (8B M = 8, 1B forward and draft step) base / new /
# new / base, then new's timeline phases for the 1B (the epilogue against next-h200-phases.sh's). ~4 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session20
O=$OUT/residual; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + residual-prefetch.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base new; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/new && patch -s -p1 < $HERE/residual-prefetch.patch) && echo "new: $(grep -c prefetch_l1 /tmp/new/cuda/gemm_tile.cuh) lines"
(cd /tmp/new && timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py tests/test_gpu_fused.py \
    > $O/gpu-tests-new.log 2>&1)
echo "new tests: exit $? $(tail -1 $O/gpu-tests-new.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-new.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run new a; run new b; run base b
(cd /tmp/new && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b \
    --csv $O/timeline-new.csv > $O/timeline-new.md 2> $O/timeline-new.log)
echo "timeline new exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (qkv|o|gate_up|down) \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \|$" $O/timeline-new.md
cd $OUT && tar czf residual.tgz residual
