#!/usr/bin/env bash
# Session 43, call 6 (nvidia-h200, carry .base: 5e955ac's tree), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session43/command-6.sh
# (NOTES v246). 1. The kernel table's AWQ rows at the commit (the bar's measurement: bf16 x, M = 8,
# 16). 2. The 70B AWQ forward (M = 8, context 1000, PDL on), new then base.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (base: 5e955ac in .base), $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8,16 \
    --ops awq_gemm --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| awq" $O/kernels/kernels.md | cut -d'|' -f2,5,6,7 | tr -d ' ' | sed 's/awq_gemm_//' | tr '\n' ' ')"
[ -f .base/paper_figures/profile_forward.py ] || cp paper_figures/profile_forward.py paper_figures/forward_ablation.py .base/paper_figures/
profile() {  # profile TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 70 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2.csv > $O/profile-$2.md 2> $O/profile-$2.log)
  echo "profile $2 exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$2.md | cut -d'|' -f2,4,5,6 | tr -s ' ' | tr '\n' ';'; echo
}
profile . new-a; profile .base base-a
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
