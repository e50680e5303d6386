#!/usr/bin/env bash
# Issue 10, the fourth (tensor-core) attention kernel, nvidia-h200 (one GPU): its tests and the
# fused-engine tests, its rows and the forwards', one ncu profile (8B, M = 8, context 1000).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/tests.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py >> $OUT/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed" $OUT/tests.log | tail -3
timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 \
    --ops attention,forward,draft_step --impl ours --out $OUT/kernels > $OUT/kernels.log 2>&1
echo "kernels exit $?"
timeout -k 5 90 ncu --clock-control none --kernel-name regex:tree_attention --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
    python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8 --context 1000 --ops attention \
    --impl ours --out /tmp/ncu-kernels > $OUT/ncu.log 2>&1
echo "ncu exit $?"
grep -E "^\| (attention|forward|draft_step) " $OUT/kernels/kernels.md | cut -c1-120
grep -E "Duration|SM Active Cycles|Elapsed Cycles|Registers|Warp Cycles Per Issued|No Eligible" $OUT/ncu.log | head
grep -E "FAILED|Error|error" $OUT/tests.log | head -20
# Run: export SWIFTSPEC_COMMIT=7986dd1 && bash paper_figures/results/2026-11-30-h200-attention-v4/command.sh
# (2026-11-30 11:12 UTC, nvidia-h200): 56 passed; rows in kernels/; ncu.log.
