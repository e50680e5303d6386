#!/usr/bin/env bash
# Thirteenth session, call 3 (nvidia-h200): the register GEMM again (the ring reverted), and two
# launch-level A/Bs in the forward (NOTES v68): every kernel's shared-memory carveout pinned
# (SWIFTSPEC_CARVEOUT = 72 / 100 percent; unset = the driver's choice a kernel), and lm_head's plan
# (NT = 2 or 1 tiles a warp, one warp a block, in place of NT = 4: a sed of plan() for N > 100000,
# the vocabularies). Forward / draft_step rows (8B, 1B, M = 8) a variant, base first and last; then
# plan_sweep.py on lm_head (8B, 1B, M = 8) with PDL on and off.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
cp swiftspec_core/kernels/gemm.py /tmp/gemm.py
variant() {  # $1: label; the environment and tree are set up for it
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 \
      --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1 > $O/kernels-$1.log 2>&1
  echo "$1 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (forward|draft_step)" $O/kernels-$1/kernels.md | cut -c1-90
}
variant base
SWIFTSPEC_CARVEOUT=72 variant carve72
SWIFTSPEC_CARVEOUT=100 variant carve100
sed -i 's/^    nt = next((t for t in (4, 2)/    if n > 100000:\n        return 2, 1\n&/' swiftspec_core/kernels/gemm.py
variant lm2
cp /tmp/gemm.py swiftspec_core/kernels/gemm.py
sed -i 's/^    nt = next((t for t in (4, 2)/    if n > 100000:\n        return 1, 1\n&/' swiftspec_core/kernels/gemm.py
variant lm1
cp /tmp/gemm.py swiftspec_core/kernels/gemm.py
variant base2
for pdl in 1 0; do
  SWIFTSPEC_PDL=$pdl PYTHONPATH=. timeout -k 5 120 python3 paper_figures/plan_sweep.py --kernel gemm \
      --models llama-3-8b,llama-3.2-1b --ops lm_head --m 8 --top 6 --csv $O/sweep-lm_head-pdl$pdl.csv \
      > $O/sweep-lm_head-pdl$pdl.md 2>&1
  echo "sweep pdl $pdl exit $? ($(( $(date +%s) - START )) s)"; grep -E "^llama|^\| llama" $O/sweep-lm_head-pdl$pdl.md | head -16
done
cd $OUT && tar czf all.tgz c3
