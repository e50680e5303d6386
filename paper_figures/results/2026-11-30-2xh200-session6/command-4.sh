#!/usr/bin/env bash
# Sixth session, call 4 (nvidia-h200-x2): issue 10's end-to-end checks at this commit on the 70
# queries of last session's s4 (6 datasets x 10 prompts + mt_bench's second turns), fused kernels,
# 8B/1B shapes, random bf16 weights, replayed acceptance, bs 8, grafting, 256 tokens: swiftspec@1+1
# and tree@tp2, then ar on 2 prompts a dataset while time is left. First the GPU tests of what
# changed since call 2 (the verifier's greedy read from the top-k kernel; the fused decoders).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 60 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_topk.py > $O/gpu-tests-topk.log 2>&1
echo "topk: exit $? $(tail -1 $O/gpu-tests-topk.log)"
timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py > $O/gpu-tests-fused.log 2>&1
echo "gpu_fused: exit $? $(tail -1 $O/gpu-tests-fused.log) ($(( $(date +%s) - START )) s)"
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( ${BUDGET_S:-400} - ($(date +%s) - START) ))
REPLAY=$O/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $O/fused $LEFT \
    "10 --systems swiftspec --split 1+1 --kernels fused" "10 --systems tree --tp 2 --kernels fused" \
    "2 --systems ar --kernels fused" > $O/fused.log 2>&1
grep -E "^==|skipped" $O/fused.log
python3 -m swiftspec_bench.cli compare $O/fused --format markdown > $O/fused/compare.md 2>&1
grep -E "overall" $O/fused/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/fused > $O/checks.md 2>&1; cat $O/checks.md
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz c4
