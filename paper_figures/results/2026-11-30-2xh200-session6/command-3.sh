#!/usr/bin/env bash
# Sixth session, call 3 (nvidia-h200-x2): issue 11's pair again, now with AWQ GEMM v3 (0029cc7), the split
# top-k and the spinning link. Same settings as the fourth session's call C (2026-11-30-2xh200-awq/c):
# the replay source holds the grafted recordings at d = 4..8, the workers' measured d replays its own.
# 70B AWQ target (GPU 0) / 3B bf16 draft (GPU 1), fused kernels, 6 datasets x 10 prompts (ar: 2,
# its 23 ms a token would take the call), 256 new tokens, bs 8, grafting. Tarred into all.tgz.
# (The AWQ GEMM v3's GPU tests ran in call 1: c1/gpu-tests-awq.log.)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
mkdir -p $OUT/c3
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $OUT/c3/env.log 2>&1
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py /tmp/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/c3/replay.log
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq" REPLAY=/tmp/replay-source TREE_BS=8 \
    bash paper_figures/run_2xh200.sh $OUT/c3/run ${DEADLINE_S:-510} "10 --systems swiftspec --split 1+1" \
    "10 --systems tree --tp 2" "2 --systems ar" > $OUT/c3/run.log 2>&1
python3 -m swiftspec_bench.cli compare $OUT/c3/run --format markdown > $OUT/c3/run/compare.md 2>&1
grep -E "^==|skipped|error" $OUT/c3/run.log | head; grep -E "overall|lossless" $OUT/c3/run/compare.md | cut -d'|' -f5-17
cd $OUT && tar czf all.tgz c3
