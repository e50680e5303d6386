#!/usr/bin/env bash
# Session 43, call 2 (nvidia-h200, carry .base: main's ae3e6ac with its awq_fp16_probe.py launcher
# mended as here), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session43/command-2.sh
# (NOTES v242; call 1's probes failed at launch: the probe passed 16 arguments to an 18-argument
# kernel since x_unit and next_x_scale were added). 1. awq_fp16_probe.py on base (main) and new
# (x-ring), o, qkv, down, gate_up_swiglu, alternately twice. 2. The kernel table's AWQ rows (the bar:
# `swiftspec-bench kernels`, bf16 x) for both, M = 8, 16.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (base: main at ae3e6ac in .base), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
probe() {  # probe TREE(. or .base) NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_fp16_probe.py --out $O/probe-$2 \
      --ops o,qkv,down,gate_up_swiglu > $O/probe-$2.log 2>&1)
  echo "probe $2: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (o|qkv|down|gate_up_swiglu) \| (1|8) " $O/probe-$2.log | cut -d'|' -f2-9
  grep -E "Error" $O/probe-$2.log | tail -2
}
kernels() {  # kernels TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8,16 \
      --ops awq_gemm --impl ours --out $O/kernels-$2 > $O/kernels-$2.log 2>&1)
  echo "kernels $2 exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels-$2/kernels.md | cut -d'|' -f2,5,6,7 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
}
probe .base base-a; probe . new-a; probe .base base-b; probe . new-b
kernels .base base; kernels . new
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
