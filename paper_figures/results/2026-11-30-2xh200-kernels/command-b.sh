#!/usr/bin/env bash
# Issue 10, call B (nvidia-h200-x2). 1) swiftspec@1+1 again with the first round changed (the draft
# grows d steps from the prompt's last token during the target's prefill) into e2e/first-round/,
# and ar@tp2 into e2e/fused/ (call A's deadline cut it); same settings as command-e2e.sh.
# 2) Where a draft step's time goes (profile_split.py: the step's call against its graph replay,
# torch.profiler tables). 3) ncu of the AWQ GEMM (call A's failed: no PYTHONPATH under ncu).
# 4) The bf16 losslessness pass with fused kernels, real acceptance, with and without grafting.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
D=paper_figures/results/2026-11-30-2xh200-kernels/e2e
mkdir -p $OUT/b
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $OUT/b/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/b/replay.log
REPLAY=$OUT/b/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $OUT/b/first-round 100 \
    "10 --systems swiftspec --split 1+1" > $OUT/b/first-round.log 2>&1
cp -r $D/fused $OUT/b/fused  # call A's rows: the run resumes them
REPLAY=$OUT/b/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $OUT/b/fused 100 \
    "10 --systems ar --tp 2" > $OUT/b/fused-ar-tp2.log 2>&1
grep -E "^==" $OUT/b/first-round.log $OUT/b/fused-ar-tp2.log
for f in first-round fused; do
  python3 -m swiftspec_bench.cli compare $OUT/b/$f --format markdown > $OUT/b/$f/compare.md 2>&1
  grep -E "overall" $OUT/b/$f/compare.md | cut -d'|' -f5-17
done
timeout -k 5 120 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 --graft ngram \
    --kernels fused --out $OUT/b/profile > $OUT/b/profile.log 2>&1
echo "profile exit $?"; grep -E "^(alone|both|request)" $OUT/b/profile/rank*.txt
for shape in "57344 8192 gate_up" "8192 28672 down"; do
  set -- $shape
  PYTHONPATH=. timeout -k 5 45 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      --section Occupancy --section LaunchStats --section InstructionStats --section ComputeWorkloadAnalysis \
      python3 paper_figures/profile_awq.py $1 $2 8 > $OUT/b/ncu-awq-$3.log 2>&1
  echo "ncu $3 exit $?"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" \
      $OUT/b/ncu-awq-$3.log | head -8
done
LEFT=$(( 555 - ($(date +%s) - START) ))
echo "lossless budget $LEFT s"
KERNELS=fused GRAFTS="off ngram" BUDGET_S=$LEFT bash paper_figures/lossless_gpu.sh $OUT/b/lossless > $OUT/b/lossless.log 2>&1
echo "lossless exit $?"; tail -n 40 $OUT/b/lossless.log
rm -rf $OUT/b/replay-source
cd $OUT && tar czf all.tgz b
