#!/usr/bin/env bash
# Call 1 of the twentieth session (nvidia-h200): session19/next-h200-staged.sh as prepared, plus the
# AWQ GPU tests on the base tree (221ca2a's shared run_planned / run_swiglu, not yet run on a GPU).
# From the nineteenth (NOTES v121): the o_proj's
# weights staged in shared memory before the PDL wait (staged.patch = branch o-staged: the 1B's
# whole, a quarter of the 8B's). Its GPU tests (staged bitwise the plain GEMM, the fused bodies and
# decoders), forward rows (8B, 1B: forward and draft_step) base / staged / staged / base, then the
# timeline of staged with one layer's blocks (o's adds and the attention's, against c2 / c3's). ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session19
O=$OUT/staged; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + staged.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base staged; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/staged && patch -s -p1 < $HERE/staged.patch) && echo "staged: $(grep -c gemm_staged_nt /tmp/staged/cuda/gemm.cu) kernel lines"
(cd /tmp/staged && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py tests/test_gpu_fused.py \
    tests/test_cuda_compile.py > $O/gpu-tests-staged.log 2>&1)
echo "staged tests: exit $? $(tail -1 $O/gpu-tests-staged.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-staged.log | head -5
(cd /tmp/base && timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_awq_norms.py \
    tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq-base.log 2>&1)
echo "awq tests (base): exit $? $(tail -1 $O/gpu-tests-awq-base.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-awq-base.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run staged a; run staged b; run base b
(cd /tmp/staged && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models llama-3-8b,llama-3.2-1b \
    --csv $O/timeline-staged.csv --blocks $O/blocks-staged.csv > $O/timeline-staged.md 2> $O/timeline-staged.log)
echo "timeline staged exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (norm|qkv|attention|o|gate_up|down) " $O/timeline-staged.md
cd $OUT && tar czf all.tgz staged
