#!/usr/bin/env bash
# Call 3 of the seventeenth session (nvidia-h200; NOTES v106): the landing commit of the attention's
# early staging (GPU tests, forward rows, the ablation), and qkvbal.patch (plan()'s next narrower
# tile between 1.1 and 1.9 blocks an SM: the 8B and 1B qkv) against it, base first and last.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session17
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base qkvbal; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/qkvbal && patch -s -p1 < $HERE/qkvbal.patch) && echo "patched qkvbal"
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward qkvbal a; forward qkvbal b; forward base b
(cd /tmp/qkvbal && timeout -k 5 100 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py \
    tests/test_kernel_gemm_norm.py > $O/gpu-tests-qkvbal.log 2>&1)
echo "qkvbal gemm tests: exit $? $(tail -1 $O/gpu-tests-qkvbal.log) ($(( $(date +%s) - START )) s)"
for mw in "llama-3-8b 8" "llama-3.2-1b 9"; do
  set -- $mw
  PYTHONPATH=. timeout -k 5 100 python3 paper_figures/forward_ablation.py --models $1 --width $2 --rounds 1 \
      --csv $O/ablation-$1-w$2.csv > $O/ablation-$1-w$2.md 2> $O/ablation-$1-w$2.log
  echo "ablation $1 width $2 exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (attention|qkv|o|gate_up|down|lm_head)" $O/ablation-$1-w$2.md | head -8
done
cd $OUT && tar czf all.tgz c3
