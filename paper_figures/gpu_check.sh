#!/usr/bin/env bash
# One device call that checks the engine where it matters: the GPU tests (tests/test_gpu.py and the
# multi-process tests, which use both GPUs where two are visible) and the losslessness pass
# (lossless_gpu.sh) for the models in MODELS; then packs what a commit needs into few files.
#
#   SWIFTSPEC_COMMIT=<hash> MODELS="llama-3.2-1b" TESTS=1 bash paper_figures/gpu_check.sh OUT
#
# OUT gets: gpu-tests.log (TESTS=1), lossless.log (the pass's output, its summary table last) and
# lossless.tgz (the run folders). BUDGET_S bounds the pass (default 420 s).
set -uo pipefail
OUT=${1:?usage: gpu_check.sh OUT}
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
mkdir -p "$OUT"
{
  echo "commit ${SWIFTSPEC_COMMIT:-unknown}, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch, cupy, triton, transformers; print("torch", torch.__version__, "cupy", cupy.__version__,
      "triton", triton.__version__, "transformers", transformers.__version__, "gpus", torch.cuda.device_count())'
} 2>&1 | tee "$OUT/env.log"
if [ "${TESTS:-1}" = 1 ]; then
  timeout "${TESTS_S:-300}" python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_runtime.py \
      tests/test_sharding.py tests/test_disagg.py 2>&1 | tee "$OUT/gpu-tests.log" | tail -n 25
fi
MODELS=${MODELS:-llama-3.2-1b} BUDGET_S=${BUDGET_S:-420} bash paper_figures/lossless_gpu.sh "$OUT/lossless" \
    > "$OUT/lossless.log" 2>&1
echo "lossless_gpu.sh exit $?" >> "$OUT/lossless.log"
tail -n 30 "$OUT/lossless.log"
tar czf "$OUT/lossless.tgz" -C "$OUT" lossless && rm -rf "$OUT/lossless"
