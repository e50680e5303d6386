#!/usr/bin/env bash
# Tenth session, call 1 (nvidia-h200; x2 not lent today): NOTES v42.
# 1) GPU tests of the kernels that now prefetch (norm, attention), the prefetch's own, the fused forward's.
# 2) profile_forward.py: each kernel of the 1B draft forward (width 9) and the 8B verification (width 8),
#    context 1000: PDL off and prefetch off (each kernel's own time), PDL on with prefetch off and on.
# 3) swiftspec-bench kernels: forward and draft_step, 8B and 1B, M = 8 (the bars), prefetch on.
# 4) plan_sweep.py on the bf16 GEMM (8B and 1B at TP 1, M = 8; qkv, o, gate_up, down).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_prefetch.py tests/test_kernel_norm.py \
    tests/test_kernel_attention.py tests/test_fused_forward.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
for run in "0 0" "1 0" "1 1"; do
  set -- $run
  SWIFTSPEC_PDL=$1 SWIFTSPEC_PREFETCH=$2 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
      --models llama-3.2-1b --width 9 --csv $O/profile-1b-pdl$1-pf$2.csv > $O/profile-1b-pdl$1-pf$2.md 2> $O/profile-1b-pdl$1-pf$2.log
  SWIFTSPEC_PDL=$1 SWIFTSPEC_PREFETCH=$2 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
      --models llama-3-8b --width 8 --csv $O/profile-8b-pdl$1-pf$2.csv > $O/profile-8b-pdl$1-pf$2.md 2> $O/profile-8b-pdl$1-pf$2.log
  echo "profile pdl=$1 prefetch=$2 ($(( $(date +%s) - START )) s)"; cat $O/profile-1b-pdl$1-pf$2.md $O/profile-8b-pdl$1-pf$2.md
  tail -2 $O/profile-1b-pdl$1-pf$2.log
done
timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (forward|draft_step) " $O/kernels/kernels.md
PYTHONPATH=. timeout -k 5 170 python3 paper_figures/plan_sweep.py --kernel gemm --models llama-3-8b,llama-3.2-1b \
    --ops qkv,o,gate_up,down --top 3 --csv $O/sweep-gemm.csv > $O/sweep-gemm.md 2> $O/sweep-gemm.log
echo "gemm sweep exit $? ($(( $(date +%s) - START )) s)"; tail -12 $O/sweep-gemm.md; tail -3 $O/sweep-gemm.log
cd $OUT && tar czf all.tgz c1
