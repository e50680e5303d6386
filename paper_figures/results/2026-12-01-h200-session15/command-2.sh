#!/usr/bin/env bash
# Fifteenth session, call 2 (nvidia-h200; NOTES v87): where the AWQ GEMM's warps stall. ncu's warp
# state statistics and per-instruction stall samples (SourceCounters) of one launch of the 70B
# gate_up and down at M = 8 (paper_figures/profile_awq.py), in base (this commit) and in call 1's
# copyonly and computeonly trees (gate_up).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
sed -n '/^variant()/,/^}/p' paper_figures/results/2026-12-01-h200-session15/command-1.sh > /tmp/variant.sh
source /tmp/variant.sh; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session15
variant /tmp/base base > /dev/null 2>&1; variant /tmp/copyonly copyonly > /dev/null 2>&1; variant /tmp/computeonly computeonly > /dev/null 2>&1
stalls() {  # stalls TREE N K NAME
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 120 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 \
      --launch-count 1 --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
      -o $O/$1-$4 python3 paper_figures/profile_awq.py $2 $3 8) > $O/$1-$4.log 2>&1
  echo "== $1 $4 exit $? ($(( $(date +%s) - START )) s)"
  ncu -i $O/$1-$4.ncu-rep --page details --print-details all > $O/$1-$4-details.txt 2>&1
  ncu -i $O/$1-$4.ncu-rep --page source --csv --print-source sass > $O/$1-$4-sass.csv 2>&1
  grep -iE "Stall|Warp Cycles Per|Active Warps|Eligible|Issued" $O/$1-$4-details.txt | grep -v "^ *-" | head -40
  echo "sass csv: $(wc -l < $O/$1-$4-sass.csv) lines"; head -2 $O/$1-$4-sass.csv | cut -c1-400
}
stalls base 57344 8192 gate_up; stalls base 8192 28672 down
stalls copyonly 57344 8192 gate_up; stalls computeonly 57344 8192 gate_up
rm -f $O/*.ncu-rep.tmp; cd $OUT && tar czf all.tgz c2
