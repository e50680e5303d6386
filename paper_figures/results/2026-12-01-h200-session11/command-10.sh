#!/usr/bin/env bash
# Eleventh session, call 10 (nvidia-h200): ncu source view of the landed tree_attention (8B, M = 8,
# context 1000): where the chunk holding the tree rows spends its time (its items run the general
# instantiation of the score and value loops, the other chunks the all-staged one; NOTES v53).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c10; mkdir -p $O
timeout -k 5 150 ncu --clock-control none --kernel-name regex:tree_attention --launch-skip 10 --launch-count 1 \
    --warp-sampling-interval 0 --section SpeedOfLight --section WarpStateStats --section SourceCounters \
    -o $O/ncu-attention python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8 --context 1000 \
    --ops attention --impl ours --out /tmp/ncu-kernels > $O/ncu-attention.log 2>&1
echo "ncu exit $? ($(( $(date +%s) - START )) s)"
timeout -k 5 60 ncu -i $O/ncu-attention.ncu-rep --page source --csv --print-source sass > $O/sass-attention.csv 2> $O/sass.err
echo "source page exit $? $(wc -l < $O/sass-attention.csv) lines"
rm -f $O/ncu-attention.ncu-rep
cd $OUT && tar czf all.tgz c10
