#!/usr/bin/env bash
# The part of command.sh one H200 can run (nvidia-h200-x2 was not lent at 11:41 UTC): the AWQ
# GEMM's GPU tests and rows at the 70B shapes, then ar on the 70B AWQ engine (built layer by layer)
# into run/ (command.sh's split and TP steps resume into the same folder on two GPUs).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
timeout -k 5 100 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_random_awq.py \
    > $OUT/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed" $OUT/tests.log | tail -2
timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1,2 --m 8 --ops awq_gemm \
    --impl ours --out $OUT/kernels > $OUT/kernels.log 2>&1
grep -E "^\| awq_gemm" $OUT/kernels/kernels.md | cut -c1-100
PYTHONPATH=. python3 paper_figures/replay_union.py $OUT/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/replay.log
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq" REPLAY=$OUT/replay-source \
    bash paper_figures/run_2xh200.sh $OUT/run ${DEADLINE_S:-300} "${LIMIT:-2} --systems ar" > $OUT/run.log 2>&1
python3 -m swiftspec_bench.cli compare $OUT/run --format markdown > $OUT/run/compare.md 2>&1
grep -E "^==|error" $OUT/run.log | head; grep -E "overall|lossless" $OUT/run/compare.md | cut -d'|' -f5-8,12-
# Run: export SWIFTSPEC_COMMIT=6f6d11e && bash paper_figures/results/2026-11-30-2xh200-awq/command-1gpu.sh
# (11:41 UTC, nvidia-h200), outputs in call-1gpu/: 80 passed, 1 failed (test_random_awq's CLI test
# ran on the GPU and asked --tp 2 of one GPU; it now pins --device cpu); the run's rows did not come
# back (the tool's file count), only run/compare.md: ar:fused 29.5 tok/s on 14 queries.
