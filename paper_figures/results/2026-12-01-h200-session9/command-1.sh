#!/usr/bin/env bash
# Ninth session, call 1 (nvidia-h200): AWQ GEMM v5 (NOTES v37).
# 1) tests/test_kernel_awq_gemm.py on the GPU (v5; clusters now PDL-launched).
# 2) paper_figures/awq_gemm_ab.py: v4 (frozen) / v5 (runtime) / v5-xr (x rows in the ring).
# 3) ncu of v5 at M = 8 on 70B gate_up and qkv with SourceCounters: the SASS instructions where warps
#    stall (page source, csv), and the usual sections.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 200 python3 paper_figures/awq_gemm_ab.py --models llama-3-70b,llama-3-8b --m 1,8,16 \
    > $O/awq-ab.md 2> $O/awq-ab.log
echo "awq ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/awq-ab.md; tail -3 $O/awq-ab.log
ncu_source() {  # N K name
  PYTHONPATH=. timeout -k 5 90 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SourceCounters \
      --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active \
      -o $O/ncu-$3 python3 paper_figures/profile_awq.py $1 $2 8 > $O/ncu-$3.log 2>&1
  echo "ncu $3 exit $? ($(( $(date +%s) - START )) s)"
  ncu -i $O/ncu-$3.ncu-rep --print-summary none > $O/ncu-$3-details.log 2>&1
  grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Active Warps|Registers Per" $O/ncu-$3-details.log
  timeout -k 5 60 ncu -i $O/ncu-$3.ncu-rep --page source --csv --print-source sass > $O/sass-$3.csv 2> $O/sass-$3.err
  echo "source page exit $? $(wc -l < $O/sass-$3.csv) lines"; head -c 600 $O/sass-$3.err
  python3 paper_figures/top_stalls.py $O/sass-$3.csv 25
}
ncu_source 57344 8192 gate_up
ncu_source 10240 8192 qkv
cd $OUT && find c1 -size +12M -delete; tar czf all.tgz c1
