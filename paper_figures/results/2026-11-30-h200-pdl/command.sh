#!/usr/bin/env bash
# Issue 10, programmatic dependent launch, nvidia-h200 (one GPU): the kernel and fused-engine tests
# (incl. PDL on vs off bitwise), then the forward and draft-step rows with PDL (pdl/) and without
# (SWIFTSPEC_PDL=0: no-pdl/), and the 8B and 1B GEMM rows at M = 8 both ways.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/tests.log
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py tests/test_kernel_gemm.py \
    tests/test_kernel_norm.py tests/test_kernel_attention.py >> $OUT/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed" $OUT/tests.log | tail -3
for mode in pdl no-pdl; do
  [ $mode = no-pdl ] && export SWIFTSPEC_PDL=0
  timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --m 1,8 \
      --ops forward,draft_step,gemm --impl ours --out $OUT/$mode > $OUT/$mode.log 2>&1
  echo "$mode kernels exit $?"
done
for mode in pdl no-pdl; do echo "== $mode"; grep -E "^\| (forward|draft_step|gemm_\w+) \| [^|]+ \| 1 \| 8 " $OUT/$mode/kernels.md | cut -c1-110; done
grep -E "FAILED|Error" $OUT/tests.log | head -20
# First run (commit 48d5556, 11:22 UTC): 29 tests failed with "SyntaxError: source code string cannot
# contain null bytes" (first-call-corrupted/tests.log): build._launch_pdl wrote the attribute value
# through ctypes' bytes copy of a char array, i.e. into the interpreter's empty bytes object; the
# attribute itself stayed 0 (no PDL). Fixed in cc3a280 (a ctypes union); rerun below.
# Rerun: export SWIFTSPEC_COMMIT=94193ff && bash paper_figures/results/2026-11-30-h200-pdl/command.sh
# (11:27 UTC, nvidia-h200): 177 passed (PDL on vs off bitwise included); rows in pdl/ and no-pdl/.
