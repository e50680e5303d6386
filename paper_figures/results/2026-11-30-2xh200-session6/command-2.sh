#!/usr/bin/env bash
# Sixth session, call 2 (nvidia-h200-x2). 1) GPU tests of the split top-k kernel and the fused
# decoders' exactness (they use it). 2) profile_split: the top-k's share of a step and a
# verification, the spinning link's wait. 3) End to end at this one commit, the same queries
# (--limit 4 a dataset; 8B/1B shapes, random bf16 weights, replayed acceptance, bs 8, grafting,
# 256 tokens): the fused set's swiftspec@1+1 and tree@tp2, then the torch kernel set's
# swiftspec@1+1, tree@tp2, ar, chain@tp2, ar@tp2 while the deadline allows (resumable).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 60 python3 -m pytest -q -rfE -rP -p no:cacheprovider tests/test_kernel_topk.py > $O/gpu-tests-topk.log 2>&1
echo "topk: exit $? $(tail -1 $O/gpu-tests-topk.log)"; grep -h "lse max abs error" $O/gpu-tests-topk.log | tail -3
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py > $O/gpu-tests-fused.log 2>&1
echo "gpu_fused: exit $? $(tail -1 $O/gpu-tests-fused.log) ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 \
    --graft ngram --kernels fused --out $O/profile > $O/profile.log 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -hE "^(alone|both|request|draft parts)" $O/profile/rank*.txt
grep -hE "topk_(part|merge)" $O/profile/rank*.txt | head -4 | cut -c1-60,100-200; rm -f $O/profile/trace-*.json
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( 575 - ($(date +%s) - START) ))
REPLAY=$O/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $O/e2e $LEFT \
    "4 --systems swiftspec --split 1+1 --kernels fused" "4 --systems tree --tp 2 --kernels fused" \
    "4 --systems swiftspec --split 1+1 --kernels torch" "4 --systems tree --tp 2 --kernels torch" \
    "4 --systems ar --kernels torch" "4 --systems chain --tp 2 --kernels torch" "4 --systems ar --tp 2 --kernels torch" \
    > $O/e2e.log 2>&1
grep -E "^==|skipped" $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -d'|' -f2-17
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz c2
