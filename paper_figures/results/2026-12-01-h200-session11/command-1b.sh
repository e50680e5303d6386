#!/usr/bin/env bash
# Eleventh session, call 1b (nvidia-h200): call 1's ncu step again (its --sampling-interval is
# --warp-sampling-interval in this ncu): tree_attention, 8B, M = 8, context 1000, SourceCounters.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
R=paper_figures/results/2026-12-01-h200-session11
O=$OUT/c1b; mkdir -p $O
timeout -k 5 200 ncu --clock-control none --kernel-name regex:tree_attention --launch-skip 10 --launch-count 1 \
    --warp-sampling-interval 0 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section SourceCounters -o $O/ncu-attention python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 \
    --m 8 --context 1000 --ops attention --impl ours --out /tmp/ncu-kernels > $O/ncu-attention.log 2>&1
echo "ncu exit $? ($(( $(date +%s) - START )) s)"; tail -3 $O/ncu-attention.log
ncu -i $O/ncu-attention.ncu-rep --print-summary none > $O/ncu-attention-details.log 2>&1
grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Active Warps|Registers Per|Grid Size" $O/ncu-attention-details.log
timeout -k 5 60 ncu -i $O/ncu-attention.ncu-rep --page source --csv --print-source sass > $O/sass-attention.csv 2> $O/sass.err
echo "source page exit $? $(wc -l < $O/sass-attention.csv) lines"; head -c 300 $O/sass.err
python3 paper_figures/top_stalls.py $O/sass-attention.csv 40
cd $OUT && find c1b -size +12M -delete; tar czf all.tgz c1b
