#!/usr/bin/env bash
# Session 28, call 6 (NOTES "Twenty-eighth session, call 6"), one H200, main at the commit given;
# carry [".data"]. (1) The draft step at the width the run defaults draft at with grafting (8 + 1 +
# 6 = 15: --tree-w 14 in the kernel bench), ours and persistent, context 1000; (2) call 5's end to
# end with 4 prompts a dataset (a fresh folder), under a deadline.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 --context 1000 \
    --ops draft_step --impl ours,persistent --tree-w 14 --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (draft_step) " $O/kernels/kernels.md
REPLAY=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12 TREE_BS=12 DATA_DIR=.data/eagle \
    bash paper_figures/run_2xh200.sh $O/e2e $(( 450 - ($(date +%s) - START) )) \
    "4 --systems ar,tree --kernels fused" "4 --systems tree --kernels persistent" > $O/e2e.log 2>&1
grep -hE "^==|skipped|error" $O/e2e.log | tail -8
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-240 | head -8
echo "done ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf c6.tgz c6
