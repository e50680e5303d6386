#!/usr/bin/env bash
# Call 4 of the seventeenth session (nvidia-h200; NOTES v107): the landed early staging on the 70B
# AWQ forward (the append inside it too, 80 layers): profile_forward.py --quant awq on this commit
# and on it with early-landed.patch reversed (the attention waiting first), base first and last;
# the fused AWQ engine's GPU test (close to torch, lossless) on this commit.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session17
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in waitfirst early; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/waitfirst && patch -s -R -p1 < $HERE/early-landed.patch && rm -f cuda/attention_append.cuh) \
  && echo "waitfirst: $(grep -c 'pdl_start();  // before the staging' /tmp/waitfirst/cuda/attention.cu) wait-first line"
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile waitfirst a; profile early a; profile early b; profile waitfirst b
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider \
    "tests/test_kernel_awq_gemm.py::test_fused_awq_engine_is_close_to_torch_and_lossless" \
    tests/test_gpu_fused.py::test_programmatic_dependent_launch_changes_no_bits > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf all.tgz c4
