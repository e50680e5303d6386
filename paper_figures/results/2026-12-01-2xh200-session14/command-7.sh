#!/usr/bin/env bash
# Fourteenth session, call 7 (nvidia-h200; NOTES v79): why the r8 accumulators at half the shared
# memory sped every AWQ GEMM (v74) where two meta slots did not (v78): ncu counters of one launch
# (the 4th) of each 70B AWQ GEMM at M = 8 (paper_figures/profile_awq.py), this commit (new) against
# a copy with 8 accumulator pieces a lane at r8 (acc4k: the kernel before v74): L1 hit rate of the
# x loads, the shared-memory carveout the driver chose, occupancy limits, DRAM throughput.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c7; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
rm -rf /tmp/acc4k; mkdir -p /tmp/acc4k; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/acc4k/
sed -i 's/static constexpr int kPieces = kTwo ? 8 : 4;/static constexpr int kPieces = 8;/' /tmp/acc4k/cuda/awq_gemm.cu
sed -i 's/^ACCUMULATOR_BYTES_R8 = 32 \* 16 \* 4 /ACCUMULATOR_BYTES_R8 = 32 * 32 * 4 /' /tmp/acc4k/swiftspec_core/kernels/awq_gemm.py
grep -n "kPieces = \|^ACCUMULATOR_BYTES_R8" /tmp/acc4k/cuda/awq_gemm.cu /tmp/acc4k/swiftspec_core/kernels/awq_gemm.py > $O/copies.log
METRICS=gpu__time_duration.sum,l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
METRICS=$METRICS,l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum,lts__t_sector_hit_rate.pct
METRICS=$METRICS,launch__shared_mem_config_size,launch__shared_mem_per_block_dynamic,launch__grid_size
METRICS=$METRICS,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__occupancy_limit_warps
METRICS=$METRICS,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
METRICS=$METRICS,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
for v in new:$ROOT acc4k:/tmp/acc4k; do
  for s in "10240 8192 qkv" "8192 8192 o" "57344 8192 gate_up" "8192 28672 down"; do
    set -- $s
    (cd ${v#*:} && PYTHONPATH=. timeout -k 5 60 ncu --clock-control none --kernel-name regex:awq_gemm --launch-skip 3 \
        --launch-count 1 --metrics $METRICS python3 paper_figures/profile_awq.py $1 $2 8) > $O/ncu-${v%%:*}-$3.log 2>&1
    echo "== ${v%%:*} $3 exit $? ($(( $(date +%s) - START )) s)"
    grep -E "gpu__time|hit_rate|lookup_hit|op_ld.sum|config_size|per_block_dynamic|occupancy_limit|dram__|warps_active|long_scoreboard" \
        $O/ncu-${v%%:*}-$3.log | awk '{print $1, $(NF-1), $NF}'
  done
done
cd $OUT && tar czf all.tgz c7
