#!/usr/bin/env bash
# For the next session with one H200 (written in the seventeenth; not run; NOTES v111): the 70B AWQ
# forward with its RMSNorms in the GEMMs' epilogues (awq-norm-epilogue.patch, = branch
# awq-norm-epilogue; CPU-tested, GPU-unverified): first its GPU tests (the new kernels' test, every
# AWQ GEMM test, the fused AWQ engine close to torch and lossless), then the 70B AWQ forward base /
# patched / patched / base, then the ablation on the patched tree; then the o12 probe. ~6.5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session17
O=$OUT/next; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base norms; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/norms && patch -s -p1 < $HERE/awq-norm-epilogue.patch) && ls /tmp/norms/swiftspec_core/kernels/awq_norms.py
(cd /tmp/norms && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_awq_norms.py \
    tests/test_kernel_awq_gemm.py tests/test_awq_plan.py > $O/gpu-tests-norms.log 2>&1)
echo "norms tests: exit $? $(tail -1 $O/gpu-tests-norms.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-norms.log | head -8
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile base a; profile norms a; profile norms b; profile base b
(cd /tmp/norms && PYTHONPATH=. timeout -k 5 150 python3 paper_figures/forward_ablation.py --models llama-3-70b --quant awq \
    --width 8 --rounds 1 --csv $O/ablation-norms.csv > $O/ablation-norms.md 2> $O/ablation-norms.log)
echo "ablation exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| " $O/ablation-norms.md | head -10
# Then a probe on the base tree (o12.patch): the 70B o_proj in 12-warp blocks (30 K registers, 80 KB
# of shared memory), which fit beside one attention block (32 K, ~75 KB), where plan()'s 22-warp
# blocks (56 K) land only once both of an SM's attention blocks have left (v109's 16 us a layer).
rm -rf /tmp/o12; mkdir -p /tmp/o12; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/o12/
(cd /tmp/o12 && patch -s -p1 < $HERE/o12.patch) && profile o12 a && profile base c && profile o12 b
cd $OUT && tar czf all.tgz next
