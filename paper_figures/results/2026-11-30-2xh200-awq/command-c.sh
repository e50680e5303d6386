#!/usr/bin/env bash
# Issue 11's pair on nvidia-h200-x2, fourth session: the prefills now dequantize the tiled AWQ
# layers with cuda/awq_dequantize.cu (bitwise the torch path; its GPU tests first), and the replay
# source holds the grafted recordings at d = 4..8, so the workers' measured d (~6) replays its own.
# 70B AWQ target (GPU 0) / 3B bf16 draft (GPU 1), fused kernels, 6 datasets x 10 prompts (ar: 2,
# its 23 ms a token would take the call), 256 new tokens, bs 8, grafting. Tarred into all.tgz.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
mkdir -p $OUT/c
timeout -k 5 90 python3 -m pytest -q -rA -p no:cacheprovider tests/test_kernel_awq_dequantize.py > $OUT/c/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed|torch path .* ms|kernel .* ms" $OUT/c/tests.log | tail -4
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py /tmp/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/c/replay.log
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq" REPLAY=/tmp/replay-source TREE_BS=8 \
    bash paper_figures/run_2xh200.sh $OUT/c/run ${DEADLINE_S:-470} "10 --systems swiftspec --split 1+1" \
    "10 --systems tree --tp 2" "2 --systems ar" > $OUT/c/run.log 2>&1
python3 -m swiftspec_bench.cli compare $OUT/c/run --format markdown > $OUT/c/run/compare.md 2>&1
grep -E "^==|skipped|error" $OUT/c/run.log | head; grep -E "overall|lossless" $OUT/c/run/compare.md | cut -d'|' -f5-17
cd $OUT && tar czf all.tgz c
