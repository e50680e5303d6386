#!/usr/bin/env bash
# Thirteenth session, call 1 (nvidia-h200): the bf16 GEMM's weights through a cp.async ring (NOTES
# v66). The GEMM / norm-GEMM / fused-forward GPU tests; the kernels' outputs against the previous
# version's (gemm_bits.py, each version in its own process: ab_old_cuda/ is cuda/ at 7c3d892, an
# untracked copy that travels with the tree and is swapped in); the kernel table's gemm rows
# (M = 1, 8, 16) and forward / draft_step rows (M = 8) for 8B, 3B, 1B, new then old.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm.py tests/test_kernel_gemm_swiglu.py \
    tests/test_kernel_gemm_norm.py tests/test_fused_forward.py tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
table() {  # $1: label
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --tp 1 \
      --m 1,8,16 --ops gemm --impl ours --out $O/kernels-$1 > $O/kernels-$1.log 2>&1
  timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --tp 1 \
      --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1 >> $O/kernels-$1.log 2>&1
  echo "kernels $1 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (gemm|forward|draft_step)" $O/kernels-$1/kernels.md | grep -E "\| (8|9) \|" | cut -c1-110
}
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/gemm_bits.py dump $O/bits-new.pt > $O/bits.log 2>&1
table new
mv cuda cuda.new && cp -r ab_old_cuda cuda
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/gemm_bits.py dump $O/bits-old.pt >> $O/bits.log 2>&1
table old
rm -rf cuda && mv cuda.new cuda
PYTHONPATH=. python3 paper_figures/gemm_bits.py compare $O/bits-old.pt $O/bits-new.pt >> $O/bits.log 2>&1
echo "bits: exit $?"; tail -1 $O/bits.log; grep -v " 0 of " $O/bits.log | head -8
rm -f $O/bits-*.pt
cd $OUT && tar czf all.tgz c1
