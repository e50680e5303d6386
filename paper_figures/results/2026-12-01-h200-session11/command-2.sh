#!/usr/bin/env bash
# Eleventh session, call 2 (nvidia-h200): an attention item a warp pair (NOTES v49).
# 1) the attention, norm and fused-decoder GPU tests; 2) attention_trace.py (8B, 1B, M = 8);
# 3) the kernel table's attention rows (M = 1, 8, 16) and forward / draft_step rows (M = 8);
# 4) ncu of tree_attention (8B, M = 8, context 1000) with SourceCounters: the SASS instructions
#    where its warps stall (items, ticket, merge).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
R=paper_figures/results/2026-12-01-h200-session11
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_kernel_norm.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/attention_trace.py --m 8 > $O/trace-m8.md 2> $O/trace-m8.log
echo "trace exit $? ($(( $(date +%s) - START )) s)"; cat $O/trace-m8.md; tail -3 $O/trace-m8.log
timeout -k 5 200 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 1,8,16 \
    --ops attention --impl ours --out $O/kernels > $O/kernels.log 2>&1
timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels >> $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (attention|forward|draft_step) " $O/kernels/kernels.md
timeout -k 5 150 ncu --clock-control none --kernel-name regex:tree_attention --launch-skip 10 --launch-count 1 \
    --warp-sampling-interval 0 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
    --section SourceCounters -o $O/ncu-attention python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 \
    --m 8 --context 1000 --ops attention --impl ours --out /tmp/ncu-kernels > $O/ncu-attention.log 2>&1
echo "ncu exit $? ($(( $(date +%s) - START )) s)"
ncu -i $O/ncu-attention.ncu-rep --print-summary none > $O/ncu-attention-details.log 2>&1
grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Active Warps|Registers Per|Grid Size" $O/ncu-attention-details.log
timeout -k 5 60 ncu -i $O/ncu-attention.ncu-rep --page source --csv --print-source sass > $O/sass-attention.csv 2> $O/sass.err
echo "source page exit $? $(wc -l < $O/sass-attention.csv) lines"; head -c 300 $O/sass.err
python3 paper_figures/top_stalls.py $O/sass-attention.csv 40
cd $OUT && find c2 -size +12M -delete; tar czf all.tgz c2
