#!/usr/bin/env bash
# Call 2 of the twenty-first session (NOTES v129, v130): every block of layer 2 on main (1B width 9,
# 8B width 8); the three-tile GEMM (nt3.patch = branch nt3) and the attention's later trigger
# (attn-trigger-items.patch, attn-trigger-exit.patch): GPU tests, then forward rows (8B and 1B at
# M = 8, draft steps at 9) in the order base items exit nt3 nt3 exit items base; the 1B timeline of
# items and nt3. ~7 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session21
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base items exit nt3; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/items && patch -s -p1 < $HERE/attn-trigger-items.patch) && (cd /tmp/exit && patch -s -p1 < $HERE/attn-trigger-exit.patch) \
  && (cd /tmp/nt3 && patch -s -p1 < $HERE/nt3.patch) && echo "patched: $(grep -c 'GEMM_KERNEL(3' /tmp/nt3/cuda/gemm.cu) nt3 kernel"
for spec in llama-3.2-1b:9 llama-3-8b:8; do
  m=${spec%:*}; w=${spec#*:}
  (cd /tmp/base && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models $m --width $w \
      --blocks $O/blocks-$m-w$w.csv > $O/timeline-base-$m-w$w.md 2> $O/timeline-base-$m-w$w.log)
  echo "blocks $m w$w: exit $? ($(( $(date +%s) - START )) s)"
done
(cd /tmp/nt3 && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py \
    tests/test_kernel_gemm_norm.py tests/test_kernel_gemm_swiglu.py tests/test_gpu_fused.py > $O/gpu-tests-nt3.log 2>&1)
echo "nt3 tests: exit $? $(tail -1 $O/gpu-tests-nt3.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-nt3.log | head -5
(cd /tmp/items && timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py > $O/gpu-tests-items.log 2>&1)
echo "items tests: exit $? $(tail -1 $O/gpu-tests-items.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-items.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run items a; run exit a; run nt3 a; run nt3 b; run exit b; run items b; run base b
for v in items nt3; do
  (cd /tmp/$v && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
      --csv $O/timeline-$v.csv > $O/timeline-$v.md 2> $O/timeline-$v.log)
  echo "timeline $v exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-$v.md | cut -d'|' -f2-8 | head -5
  grep -E "^\| (qkv|o|gate_up|down) \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \| [-0-9.na]+ \|$" $O/timeline-$v.md
done
cd $OUT && tar czf c2.tgz c2
