#!/usr/bin/env bash
# Session 33, call 6 (nvidia-h200, no carry; ran at 2be9dde as `SWIFTSPEC_COMMIT=2be9dde bash command-6.sh`, 47 s): ncu of the 70B o at M = 8, awq_gemm at (S, C) =
# (16, 1) against the chain's kernel as one phase (16 warps), both alone (NOTES v208): where do
# the chain's warps stall that awq_gemm's do not?
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
ncu_source() {  # how
  PYTHONPATH=. timeout -k 5 120 ncu --clock-control none --kernel-name regex:awq_ --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SourceCounters \
      --section MemoryWorkloadAnalysis \
      --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active \
      -o $O/ncu-$1 python3 paper_figures/profile_awq.py 8192 8192 8 $1 > $O/ncu-$1.log 2>&1
  echo "ncu $1 exit $? ($(( $(date +%s) - START )) s)"
  ncu -i $O/ncu-$1.ncu-rep --print-summary none > $O/ncu-$1-details.log 2>&1
  grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Active Warps|Registers Per|Issue Slots Busy|L2 Hit|L1/TEX Hit" $O/ncu-$1-details.log
  grep -E "stalled_.*per_issue_active" $O/ncu-$1-details.log | sort -k3 -n -r | head -8
  timeout -k 5 60 ncu -i $O/ncu-$1.ncu-rep --page source --csv --print-source sass > $O/sass-$1.csv 2> $O/sass-$1.err
  python3 paper_figures/top_stalls.py $O/sass-$1.csv 15 > $O/top-stalls-$1.txt 2>&1; tail -16 $O/top-stalls-$1.txt | cut -c1-160
}
ncu_source s16
ncu_source chain
cd $OUT && find c6 -size +12M -delete; tar czf c6.tgz c6 && rm -rf c6
