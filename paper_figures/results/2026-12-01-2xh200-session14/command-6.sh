#!/usr/bin/env bash
# Fourteenth session, call 6 (nvidia-h200; NOTES v78): the AWQ ring's meta slots 4 -> 2 at G = 128.
# The AWQ GPU tests on this commit; then the 70B AWQ forward (M = 8, context 1000, PDL on) of new
# (this commit) and base (a copy with STAGES meta slots at every G, as before), order new,
# base, new, base; the AWQ kernel rows (70B, M = 8, back to back) of both.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
rm -rf /tmp/base; mkdir -p /tmp/base; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/base/
sed -i 's/static constexpr int kMetaSlots = kChunks == AWQ_STAGES ? 2 : AWQ_STAGES;/static constexpr int kMetaSlots = AWQ_STAGES;/' /tmp/base/cuda/awq_gemm.cu
sed -i 's/^    meta_slots = 2 if group == 32 \* STAGES else STAGES$/    meta_slots = STAGES/' /tmp/base/swiftspec_core/kernels/awq_gemm.py
grep -n "kMetaSlots = \|    meta_slots = " /tmp/base/cuda/awq_gemm.cu /tmp/base/swiftspec_core/kernels/awq_gemm.py > $O/copies.log; cat $O/copies.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
profile() {  # profile DIR NAME RUN
  (cd $1 && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2-$3.csv > $O/profile-$2-$3.md 2> $O/profile-$2-$3.log)
  echo "profile $2 ($3) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2-$3.md)"
}
profile $ROOT new a; profile /tmp/base base a; profile $ROOT new b; profile /tmp/base base b
for t in new:$ROOT base:/tmp/base; do
  (cd ${t#*:} && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 \
      --ops awq_gemm --impl ours --out $O/kernels-${t%%:*} > $O/kernels-${t%%:*}.log 2>&1)
  echo "kernels ${t%%:*} exit $?"; grep -E "^\| awq" $O/kernels-${t%%:*}/kernels.md | cut -c1-100
done
cd $OUT && tar czf all.tgz c6
