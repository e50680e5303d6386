#!/usr/bin/env bash
# Session 46, call 5 (nvidia-h200), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session46/command-5.sh
# (NOTES v262): ncu of the 70B o at M = 8, awq_gemm at (16, 1) against session 45's stream-K kernel
# on 128 blocks of 16 warps (the same split), one launch each: where do stream-K's warps stall
# that awq_gemm's do not? The stream-K patch is applied to the device's copy of the tree only.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
patch -p1 -s < paper_figures/results/2026-12-04-h200-session45/streamk.patch || { echo "error: the patch did not apply"; exit 2; }
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + session45/streamk.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
ncu_source() {  # gemm | streamk
  PYTHONPATH=. timeout -k 5 150 ncu --clock-control none --kernel-name regex:awq_ --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SourceCounters \
      --section MemoryWorkloadAnalysis --section InstructionStats --section SchedulerStats \
      --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active \
      -o $O/ncu-$1 python3 paper_figures/results/2026-12-04-h200-session46/ncu_streamk.py $1 > $O/ncu-$1.log 2>&1
  echo "ncu $1 exit $? ($(( $(date +%s) - START )) s)"
  ncu -i $O/ncu-$1.ncu-rep --print-summary none > $O/ncu-$1-details.log 2>&1
  grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Active Warps|Registers Per|Issue Slots Busy|Issued Ipc|L2 Hit|L1/TEX Hit|Executed Instructions |No Eligible|Shared Memory Configuration Size|Dynamic Shared" $O/ncu-$1-details.log
  grep -E "stalled_.*per_issue_active" $O/ncu-$1-details.log | sort -k3 -n -r | head -10
  timeout -k 5 60 ncu -i $O/ncu-$1.ncu-rep --page source --csv --print-source sass > $O/sass-$1.csv 2> $O/sass-$1.err
  python3 paper_figures/top_stalls.py $O/sass-$1.csv 15 > $O/top-stalls-$1.txt 2>&1; tail -16 $O/top-stalls-$1.txt | cut -c1-160
}
ncu_source gemm
ncu_source streamk
cd $OUT && find c5 -size +12M -delete; tar czf c5.tgz c5 && rm -rf c5
