#!/usr/bin/env bash
# Tenth session, call 2 (nvidia-h200): NOTES v43, the attention's shared one-pass merge.
# 1) GPU tests: attention (the merge shared by 1..4 blocks bitwise), prefetch, fused decoders.
# 2) profile_forward.py, 1B width 9 and 8B width 8: PDL off (each kernel's own time), PDL on with
#    the attention's prefetch off and on.
# 3) swiftspec-bench kernels: attention (8B, 1B; M 1, 8, 16; context 500, 1000), forward and
#    draft_step (M = 8), the runtime's defaults.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_prefetch.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
for run in "0 0" "1 0" "1 1"; do
  set -- $run
  for mw in "llama-3.2-1b 9 1b" "llama-3-8b 8 8b"; do
    set -- $run $mw
    SWIFTSPEC_PDL=$1 SWIFTSPEC_PREFETCH=$2 PYTHONPATH=. timeout -k 5 100 python3 paper_figures/profile_forward.py \
        --models $3 --width $4 --csv $O/profile-$5-pdl$1-pf$2.csv > $O/profile-$5-pdl$1-pf$2.md 2> $O/profile-$5-pdl$1-pf$2.log
    head -2 $O/profile-$5-pdl$1-pf$2.md | tail -1 | cut -c1-220
    grep -E "^\| (attention|o|qkv) " $O/profile-$5-pdl$1-pf$2.md
  done
  echo "($(( $(date +%s) - START )) s)"
done
timeout -k 5 200 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 1,8,16 \
    --ops attention --impl ours --out $O/kernels > $O/kernels.log 2>&1
timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 8 \
    --ops forward,draft_step --impl ours --out $O/kernels >> $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (attention|forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf all.tgz c2
