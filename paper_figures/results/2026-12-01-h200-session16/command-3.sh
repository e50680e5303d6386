#!/usr/bin/env bash
# Sixteenth session, call 3 (nvidia-h200; NOTES v98): the cache append inside the attention. GPU
# tests on this commit (the attention's, the fused decoders exact, the fused AWQ engine); forward /
# draft_step rows (8B, 1B) against base (append-inside.patch reversed in a copy), interleaved
# twice; the ablation (forward_ablation.py) on this commit.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session16
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 240 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    "tests/test_kernel_awq_gemm.py::test_fused_awq_engine_is_close_to_torch_and_lossless" > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
for v in base new; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/base && patch -s -R -p1 < $HERE/append-inside.patch) && grep -c "append_kv(qkv, positions" /tmp/{base,new}/swiftspec_core/kernels/forward.py
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward new a; forward base b; forward new b
ablation() {  # ablation MODEL WIDTH
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/forward_ablation.py --models $1 --width $2 \
      --csv $O/ablation-$1-w$2.csv > $O/ablation-$1-w$2.md 2> $O/ablation-$1-w$2.log
  echo "ablation $1 width $2 exit $? ($(( $(date +%s) - START )) s)"; cat $O/ablation-$1-w$2.md
}
ablation llama-3-8b 8
ablation llama-3.2-1b 9
cd $OUT && tar czf all.tgz c3
