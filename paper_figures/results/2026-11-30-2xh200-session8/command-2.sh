#!/usr/bin/env bash
# Eighth session, call 2 (nvidia-h200-x2).
# 1) ncu of the AWQ GEMM v4 at M = 8 on three 70B shapes (gate_up, down, qkv), GPU 0: speed of
#    light, warp states, scheduler, occupancy, and the stall reasons a issued instruction, to see
#    what bounds it at 72% (gate_up) and 48% (qkv) of the copy bandwidth.
# 2) Issue 11's pair with v4 and session 7's prefill (SDPA flash / efficient): 70B AWQ target
#    (GPU 0) / 3B bf16 draft (GPU 1), fused kernels, 6 datasets x 10 prompts (ar: 2), 256 new tokens,
#    bs 8, grafting, replayed from the grafted recordings (d = 4..8) as session 6's call 3.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
ncu_shape() {  # N K name
  CUDA_VISIBLE_DEVICES=0 PYTHONPATH=. timeout -k 5 60 ncu --clock-control none --kernel-name regex:awq_gemm \
      --launch-skip 3 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active \
      python3 paper_figures/profile_awq.py $1 $2 8 > $O/ncu-awq-$3.log 2>&1
  echo "ncu $3 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Warp Cycles Per Issued|Achieved Active Warps|Registers Per" $O/ncu-awq-$3.log
  grep -E "issue_stalled" $O/ncu-awq-$3.log | awk '{print $1, $NF}' | sort -k2 -g -r | head -6
}
ncu_shape 57344 8192 gate_up
ncu_shape 8192 28672 down
ncu_shape 10240 8192 qkv
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py /tmp/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( 545 - ($(date +%s) - START) ))
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq --kernels fused" REPLAY=/tmp/replay-source TREE_BS=8 \
    bash paper_figures/run_2xh200.sh $O/run $LEFT "10 --systems swiftspec --split 1+1" \
    "10 --systems tree --tp 2" "2 --systems ar" > $O/run.log 2>&1
python3 -m swiftspec_bench.cli compare $O/run --format markdown > $O/run/compare.md 2>&1
grep -E "^==|skipped|error" $O/run.log | head; grep -E "overall" $O/run/compare.md | cut -d'|' -f2-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/run > $O/run/checks.md 2>&1; cat $O/run/checks.md | head -30
cd $OUT && tar czf all.tgz c2
