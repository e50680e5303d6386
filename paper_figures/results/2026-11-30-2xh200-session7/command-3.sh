#!/usr/bin/env bash
# Seventh session, call 3 (nvidia-h200-x2): v31's host-side changes, first GPU run.
# 1) prefill_ab.py on GPU 0: the prefill attention as at 2b651c6 (torch's pick: cuDNN) against
#    today's (K and V repeated, flash / memory-efficient), first call of a length and warm.
# 2) GPU tests of what the changes touch: the fused decoders' exactness (prefill, cache keep),
#    the split round against lockstep (messages through numpy views), graphs against eager.
# 3) profile_split: the draft's deferred cache move (settle) with index_select / index_copy_.
# 4) E2E, --limit 2 (14 of call 2's 28 queries), bs 8: swiftspec@1+1 and tree@tp2, for the
#    prefill and the first-round wait against call 2's rows of the same queries.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/prefill_ab.py > $O/prefill-ab.md 2> $O/prefill-ab.log
echo "prefill_ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/prefill-ab.md; tail -3 $O/prefill-ab.log
timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py > $O/gpu-tests-fused.log 2>&1
echo "gpu_fused: exit $? $(tail -1 $O/gpu-tests-fused.log) ($(( $(date +%s) - START )) s)"
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu.py \
    -k "split_round or graph_forward or lossless_with_graphs" > $O/gpu-tests.log 2>&1
echo "gpu: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 \
    --graft ngram --kernels fused --out $O/profile > $O/profile.log 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -hE "^(request|draft parts)" $O/profile/rank*.txt
rm -f $O/profile/trace-*.json
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-bs8 $G paper_figures/results/cpu-qwen-pair > $O/replay.log
LEFT=$(( 420 - ($(date +%s) - START) ))
REPLAY=$O/replay-bs8 TREE_BS=8 bash paper_figures/run_2xh200.sh $O/bs8 $LEFT \
    "2 --systems swiftspec --split 1+1 --kernels fused" "2 --systems tree --tp 2 --kernels fused" > $O/bs8.log 2>&1
grep -E "^==|skipped" $O/bs8.log
python3 -m swiftspec_bench.cli compare $O/bs8 --format markdown > $O/bs8/compare.md 2>&1
grep -E "overall" $O/bs8/compare.md | cut -d'|' -f2-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/bs8 > $O/bs8/checks.md 2>&1; cat $O/bs8/checks.md
rm -rf $O/replay-bs8
cd $OUT && tar czf all.tgz c3
