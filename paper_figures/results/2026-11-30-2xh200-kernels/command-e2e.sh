#!/usr/bin/env bash
# Issue 10's end-to-end benchmark with the kernels as they stand (tensor-core attention, one-pass
# combine, PDL), nvidia-h200-x2. First every kernel and fused-engine GPU test (the last refactors of
# gemm.cu and attention.cu had not run on a GPU), an ncu profile of the AWQ GEMM (issue 11: 70B
# gate_up and down at tp 1, M = 8), then fused-kernel e2e: ar, ar@tp2, chain@tp2, tree@tp2,
# swiftspec@1+1 (grafting on where it applies: the CLI default), Llama-3-8B / 3.2-1B shapes, random
# bf16 weights, acceptance replayed from the real Qwen pair (the grafting folder's recordings, then
# cpu-qwen-pair's; --tree-bs 8, the recordings' budget), 6 datasets x 10 prompts, 256 new tokens.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
mkdir -p $OUT/e2e
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $OUT/e2e/env.log 2>&1
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_*.py tests/test_gpu_fused.py \
    > $OUT/e2e/gpu-tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed" $OUT/e2e/gpu-tests.log | tail -2
for shape in "57344 8192 gate_up" "8192 28672 down"; do
  set -- $shape
  timeout -k 5 45 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      --section Occupancy --section LaunchStats --section InstructionStats --section ComputeWorkloadAnalysis \
      python3 paper_figures/profile_awq.py $1 $2 8 > $OUT/e2e/ncu-awq-$3.log 2>&1
  echo "ncu $3 exit $?"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" \
      $OUT/e2e/ncu-awq-$3.log | head -8
done
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $OUT/e2e/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/e2e/replay.log
REPLAY=$OUT/e2e/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $OUT/e2e/fused 400 \
    "10 --systems swiftspec --split 1+1" "10 --systems tree --tp 2" "10 --systems ar" \
    "10 --systems chain --tp 2" "10 --systems ar --tp 2" > $OUT/e2e/fused.log 2>&1
grep -E "^==" $OUT/e2e/fused.log
python3 -m swiftspec_bench.cli compare $OUT/e2e/fused --format markdown > $OUT/e2e/fused/compare.md 2>&1
grep -E "overall" $OUT/e2e/fused/compare.md | cut -d'|' -f5-12
rm -rf $OUT/e2e/replay-source
cd $OUT && tar czf all.tgz e2e
