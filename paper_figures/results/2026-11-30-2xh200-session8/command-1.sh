#!/usr/bin/env bash
# Eighth session, call 1 (nvidia-h200-x2).
#   GPU 1 (in the background): tests/test_kernel_awq_gemm.py (AWQ GEMM v4: meta slots), then
#     paper_figures/awq_gemm_ab.py (v3 / v4 / v4 with 8 stages / v4 with the L2::256B hint).
#   GPU 0: tests/test_gpu_fused.py (the KV cache as one tensor, the deferred keep in KVCache).
#   Then both GPUs: tests/test_gpu.py's split round, graphs and lossless tests; then the KV cache
#   A/B of session 7's command-5.sh (this commit against 5233985, two tensors), two runs a side.
# The snapshot, made here and carried (carry: .cache/ab):
#   mkdir -p .cache/ab/two-tensors && git archive 5233985 swiftspec_core swiftspec_bench cuda paper_figures \
#     tests datasets.yaml pyproject.toml | tar x -C .cache/ab/two-tensors && rm -rf .cache/ab/two-tensors/paper_figures/results
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
( export CUDA_VISIBLE_DEVICES=1
  timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq.log 2>&1
  echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
  PYTHONPATH=. timeout -k 5 200 python3 paper_figures/awq_gemm_ab.py --models llama-3-70b,llama-3-8b --m 1,8,16 \
      > $O/awq-ab.md 2> $O/awq-ab.log
  echo "awq ab exit $? ($(( $(date +%s) - START )) s)" ) > $O/gpu1.log 2>&1 &
CUDA_VISIBLE_DEVICES=0 timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py > $O/gpu-tests-fused.log 2>&1
echo "gpu_fused: exit $? $(tail -1 $O/gpu-tests-fused.log) ($(( $(date +%s) - START )) s)"
wait
cat $O/gpu1.log; cat $O/awq-ab.md; tail -3 $O/awq-ab.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu.py \
    -k "split_round or graph_forward or lossless_with_graphs" > $O/gpu-tests.log 2>&1
echo "gpu: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
mkdir -p $O/kv
ARGS="--prompt-len 500 --tokens 128 --draft-steps 3 --graft ngram --kernels fused"
i=0
for side in one two one two; do
  i=$((i + 1)); (( $(date +%s) - START > 420 )) && break
  if [ $side = one ]; then D=$ROOT; else D=$ROOT/.cache/ab/two-tensors; fi
  (cd $D && PYTHONPATH=$D:$D/paper_figures timeout -k 5 45 python3 paper_figures/profile_split.py $ARGS --out $O/kv/$i-$side \
      > $O/kv/$i-$side.log 2>&1 || true; echo "kv $i $side ($(( $(date +%s) - START )) s)")
  rm -f $O/kv/$i-$side/trace-*.json
done 2>&1 | tee $O/kv.log
for f in $O/kv/*/rank1.txt; do echo "$(basename $(dirname $f)): $(grep -h "draft parts" $f)"; done
for f in $O/kv/*/rank0.txt; do echo "$(basename $(dirname $f)): $(grep -h "^request 1" $f)"; done
cd $OUT && tar czf all.tgz c1
