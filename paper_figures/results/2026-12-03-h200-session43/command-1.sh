#!/usr/bin/env bash
# Session 43, call 1 (nvidia-h200, carry .base: a clean export of main's cuda/, swiftspec_*/ and the
# probes at ae3e6ac), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session43/command-1.sh
# (NOTES v242). 1. The AWQ GPU tests on the x-ring kernel (x copied into the ring with the codes at
# M <= 8). 2. awq_fp16_probe.py on base (main) and new (x-ring), o, qkv, down, gate_up_swiglu,
# twice each alternately. 3. ncu of the new kernel on the 70B o at M = 8 (bf16 x), source stalls.
# 4. The GPU tests at the commit (test_gpu.py) and the replay / settings tests under the device's
# versions.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (base: main at ae3e6ac in .base), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
timeout -k 5 240 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_fused_forward.py tests/test_kernel_awq_allreduce.py tests/test_cuda_compile.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
probe() {  # probe TREE(. or .base) NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/awq_fp16_probe.py --out $O/probe-$2 \
      --ops o,qkv,down,gate_up_swiglu > $O/probe-$2.log 2>&1)
  echo "probe $2: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (o|qkv|down|gate_up_swiglu) \| (1|8) " $O/probe-$2.log | cut -d'|' -f2-9
}
probe .base base-a; probe . new-a; probe .base base-b; probe . new-b
PYTHONPATH=. timeout -k 5 120 ncu --clock-control none --kernel-name regex:awq_ --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section SourceCounters \
    --section MemoryWorkloadAnalysis --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active \
    -o $O/ncu-new-o python3 paper_figures/profile_awq.py 8192 8192 8 > $O/ncu-new-o.log 2>&1
echo "ncu exit $? ($(( $(date +%s) - START )) s)"
ncu -i $O/ncu-new-o.ncu-rep --print-summary none > $O/ncu-new-o-details.log 2>&1
grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Active Warps|Registers Per|Issue Slots Busy|L2 Hit|L1/TEX Hit" $O/ncu-new-o-details.log
grep -E "stalled_.*per_issue_active.ratio" $O/ncu-new-o-details.log | sort -k3 -n -r | head -6
timeout -k 5 60 ncu -i $O/ncu-new-o.ncu-rep --page source --csv --print-source sass > $O/sass-new-o.csv 2> $O/sass-new-o.err
python3 paper_figures/top_stalls.py $O/sass-new-o.csv 12 > $O/top-stalls-new-o.txt 2>&1; tail -12 $O/top-stalls-new-o.txt | cut -c1-150
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT"
  time timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_bench_replay_audit.py \
      tests/test_bench_settings.py; } > $O/gpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
echo "gpu tests: $(grep -E "passed|failed" $O/gpu-tests-$SWIFTSPEC_COMMIT.log | tail -1) ($(( $(date +%s) - START )) s)"
grep -E "^FAILED" $O/gpu-tests-$SWIFTSPEC_COMMIT.log | head -5
cd $OUT && find c1 -size +12M -delete; tar czf c1.tgz c1 && rm -rf c1
