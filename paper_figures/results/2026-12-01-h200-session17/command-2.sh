#!/usr/bin/env bash
# Call 2 of the seventeenth session (nvidia-h200; NOTES v105): the tree attention's tile staged
# before its PDL wait (early.patch), its split-KV merge through a thread block cluster's shared
# memory (cluster.patch), both (early-cluster.patch), and half the attention's blocks (groups1.patch:
# one block slot an SM instead of MIN_BLOCKS). GPU tests on early-cluster (attention incl. the new
# cluster-vs-global bitwise test, the fused decoders exact) and on early (attention); forward /
# draft_step rows (8B, 1B, M = 8) of each, base first and last; attention kernel rows base vs
# early-cluster.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session17
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base early cluster earlycluster groups1; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/early && patch -s -p1 < $HERE/early.patch) && (cd /tmp/cluster && patch -s -p1 < $HERE/cluster.patch) \
  && (cd /tmp/earlycluster && patch -s -p1 < $HERE/early-cluster.patch) && (cd /tmp/groups1 && patch -s -p1 < $HERE/groups1.patch) \
  && echo "patched: $(grep -c tree_attention_cluster /tmp/earlycluster/cuda/attention.cu) cluster entries"
(cd /tmp/earlycluster && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-earlycluster.log 2>&1)
echo "earlycluster tests: exit $? $(tail -1 $O/gpu-tests-earlycluster.log) ($(( $(date +%s) - START )) s)"
(cd /tmp/early && timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    > $O/gpu-tests-early.log 2>&1)
echo "early tests: exit $? $(tail -1 $O/gpu-tests-early.log) ($(( $(date +%s) - START )) s)"
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward early a; forward cluster a; forward earlycluster a; forward groups1 a
forward groups1 b; forward earlycluster b; forward cluster b; forward early b; forward base b
attention() {  # attention TREE
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 1,8,16 --ops attention --impl ours --out $O/attention-$1 > $O/attention-$1.log 2>&1)
  echo "attention $1 exit $? ($(( $(date +%s) - START )) s): $(grep -E "^attention" $O/attention-$1/kernels.csv | cut -d, -f2,4,5,7 | tr '\n' ' ')"
}
attention base; attention earlycluster
cd $OUT && tar czf all.tgz c2
