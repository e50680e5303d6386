#!/usr/bin/env bash
# Issue 10 (third attention kernel) and issue 11 (AWQ GEMM rows), nvidia-h200 (one GPU).
# Tests of the attention kernel, the AWQ GEMM and the fused engine, then the kernel rows, then one
# ncu profile of the attention at Llama-3-8B, M = 8, context 1000. Logs and tables under $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/env.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_kernel_awq_gemm.py tests/test_gpu_fused.py > $OUT/tests.log 2>&1
echo "tests exit $?"; tail -3 $OUT/tests.log
timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 \
    --ops attention,forward,draft_step --impl ours --out $OUT/kernels > $OUT/kernels.log 2>&1
echo "kernels exit $?"
timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-70b,llama-3.2-3b --tp 1,2 \
    --ops awq_gemm,gemm --impl ours --m 1,8 --out $OUT/awq > $OUT/awq.log 2>&1
echo "awq exit $?"
timeout -k 5 90 ncu --clock-control none --kernel-name regex:tree_attention --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
    --section Occupancy --section LaunchStats \
    python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8 --context 1000 --ops attention \
    --impl ours --out $OUT/ncu-kernels > $OUT/ncu.log 2>&1
echo "ncu exit $?"
grep -E "^\| (attention|forward|draft_step|awq_gemm|gemm_(gate_up|down|qkv|o)) " $OUT/kernels/kernels.md $OUT/awq/kernels.md | cut -c1-160
grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers|Warp Cycles Per Issued|No Eligible|Stall" $OUT/ncu.log | head -30
# Run: export SWIFTSPEC_COMMIT=b4f47a4 && bash paper_figures/results/2026-11-30-h200-attention-v3/command.sh
# (2026-11-30 10:58 UTC, nvidia-h200; kernels/kernels.md did not come back: the tool's file count.)
