#!/usr/bin/env bash
# Fifteenth session, call 6 (nvidia-h200; NOTES v91): the SM pipes' and the L1 / shared-memory data
# path's utilization in the AWQ GEMM (70B gate_up, M = 8): ncu's ComputeWorkloadAnalysis,
# InstructionStats and MemoryWorkloadAnalysis of one launch, base and computeonly (call 1's tree).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; ncu --version | tail -1; } > $O/env.log 2>&1
sed -n '/^variant()/,/^}/p' paper_figures/results/2026-12-01-h200-session15/command-1.sh > /tmp/variant.sh
source /tmp/variant.sh
variant /tmp/base base > /dev/null 2>&1; variant /tmp/computeonly computeonly > /dev/null 2>&1
for t in base computeonly; do
  (cd /tmp/$t && PYTHONPATH=. timeout -k 5 120 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 \
      --launch-count 1 --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis \
      --section MemoryWorkloadAnalysis_Tables --section SpeedOfLight --metrics smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second \
      -o $O/$t python3 paper_figures/profile_awq.py 57344 8192 8) > $O/$t.log 2>&1
  echo "== $t exit $? ($(( $(date +%s) - START )) s)"
  ncu -i $O/$t.ncu-rep --page details --print-details all > $O/$t-details.txt 2>&1
  grep -iE "Pipe|Utilization|Throughput|Frequency|per_second|Duration|Shared|L1/TEX Hit|Issue" $O/$t-details.txt | grep -v "^ *-" | head -45
done
rm -f $O/*.ncu-rep; cd $OUT && tar czf all.tgz c6
