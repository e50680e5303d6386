#!/usr/bin/env bash
# Seventh session, call 5 (nvidia-h200-x2, the last ~4 minutes of device time): KVCache with keys
# and values in one tensor (keep: one gather and one scatter) against 5233985 (two tensors, two
# of each), profile_split at each, alternating: the draft's settle median and step median.
# The snapshot, made here and carried (carry: .cache/ab):
#   mkdir -p .cache/ab/two-tensors && git archive 5233985 swiftspec_core swiftspec_bench cuda paper_figures \
#     tests datasets.yaml pyproject.toml | tar x -C .cache/ab/two-tensors && rm -rf .cache/ab/two-tensors/paper_figures/results
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
ROOT=$PWD; O=$OUT/c5; mkdir -p $O
ARGS="--prompt-len 500 --tokens 128 --draft-steps 3 --graft ngram --kernels fused"
START=$(date +%s); i=0
for side in one two one two; do
  i=$((i + 1)); (( $(date +%s) - START > 120 )) && break
  if [ $side = one ]; then D=$ROOT; else D=$ROOT/.cache/ab/two-tensors; fi
  (cd $D && PYTHONPATH=$D:$D/paper_figures timeout -k 5 45 python3 paper_figures/profile_split.py $ARGS --out $O/$i-$side \
      > $O/$i-$side.log 2>&1; echo "$i $side exit $? ($(( $(date +%s) - START )) s)")
  rm -f $O/$i-$side/trace-*.json
done
for f in $O/*/rank1.txt; do echo "$(basename $(dirname $f)): $(grep -h "draft parts" $f)"; done
for f in $O/*/rank0.txt; do echo "$(basename $(dirname $f)): $(grep -h "^request 1" $f)"; done
