#!/usr/bin/env bash
# Session 38, call 5 (nvidia-h200, carry .base = `git archive 424badc swiftspec_core swiftspec_bench
# paper_figures/profile_forward.py cuda`), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session38/command-5.sh
# (NOTES v230). The 70B AWQ forward (profile_forward.py, M = 8, context 1000, PDL on) before the
# fp16 unit (424badc, in .base) and at this commit, interleaved base, new, base, new.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
profile() {  # profile TREE RUN
  local dir=$ROOT; [ "$1" = base ] && dir=$ROOT/.base
  (cd $dir && PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile base a; profile new a; profile base b; profile new b
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
