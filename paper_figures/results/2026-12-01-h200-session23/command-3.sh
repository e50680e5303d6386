#!/usr/bin/env bash
# Call 3 of the twenty-third session (NOTES v138, v139): the 1B's MLP norm as a kernel before a plain
# gate_up (mlp-norm-kernel.patch: mlpk), beside every norm as a kernel (norm-kernels.patch: allk, the
# 8B's body), and v137's check: the GEMMs' first weight loads after the PDL wait (nowait-prefetch.patch:
# nowait). In patched copies: mlpk's GPU tests (fused forward, fused decoders exact), rows base / mlpk /
# allk / nowait / mlpk / base (1B forward and draft step), timelines of mlpk and nowait at width 9. ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session23
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (+ patches by variant), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base mlpk allk nowait; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/mlpk && patch -s -p1 < $HERE/mlp-norm-kernel.patch) && (cd /tmp/allk && patch -s -p1 < $HERE/norm-kernels.patch) \
  && (cd /tmp/nowait && patch -s -p1 < $HERE/nowait-prefetch.patch) && echo "patched"
(cd /tmp/mlpk && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_fused_forward.py \
    tests/test_gpu_fused.py > $O/gpu-tests-mlpk.log 2>&1)
echo "mlpk tests: exit $? $(tail -1 $O/gpu-tests-mlpk.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-mlpk.log | head -8
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run mlpk a; run allk a; run nowait a; run mlpk b; run base b
for v in mlpk nowait; do
  (cd /tmp/$v && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
      --csv $O/timeline-$v.csv > $O/timeline-$v.md 2> $O/timeline-$v.log)
  echo "timeline $v exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (place|qkv|attention|o|norm \(mlp\)|gate_up|down) \|" $O/timeline-$v.md | cut -d'|' -f2-13
done
cd $OUT && tar czf c3.tgz c3
