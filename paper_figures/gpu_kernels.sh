#!/usr/bin/env bash
# One device call for issue 10's kernels: the kernel and fused-engine GPU tests, then the kernel
# table (`swiftspec-bench kernels`), on nvidia-h200-x2 (the all-reduce rows need two GPUs).
#
#   SWIFTSPEC_COMMIT=<hash> bash paper_figures/gpu_kernels.sh OUT [KERNELS ARGS...]
#
# OUT gets env.log, gpu-tests.log (pytest -rA: every test's own output) and kernels/ (kernels.csv,
# kernels.md). TESTS_S and BENCH_S bound the two parts.
set -uo pipefail
OUT=${1:?usage: gpu_kernels.sh OUT [KERNELS ARGS...]}
shift
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
mkdir -p "$OUT"
{
  echo "commit ${SWIFTSPEC_COMMIT:-unknown}, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, cupy; print("torch", torch.__version__, "cupy", cupy.__version__, "gpus", torch.cuda.device_count())'
} 2>&1 | tee "$OUT/env.log"
timeout -k 5 "${TESTS_S:-240}" python3 -m pytest -q -rA -p no:cacheprovider tests/test_kernel_*.py \
    tests/test_gpu_fused.py > "$OUT/gpu-tests.log" 2>&1
echo "pytest exit $?" >> "$OUT/gpu-tests.log"
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed" "$OUT/gpu-tests.log" | tail -n 60
timeout -k 5 "${BENCH_S:-240}" python3 -m swiftspec_bench.cli kernels --out "$OUT/kernels" "$@" > "$OUT/kernels.log" 2>&1
echo "kernels exit $?" >> "$OUT/kernels.log"
tail -n 5 "$OUT/kernels.log"
[ -f "$OUT/kernels/kernels.md" ] && cat "$OUT/kernels/kernels.md"
