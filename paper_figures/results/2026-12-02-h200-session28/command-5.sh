#!/usr/bin/env bash
# Session 28, call 5 (NOTES "Twenty-eighth session, call 5"), one H200, main at the commit given;
# carry [".data"]. Call 4's end-to-end part, which stopped at once: results/cpu-qwen-pair has no
# tree rows for mt_bench. Replayed instead from the real pair's bs 12 recordings with grafting
# (results/2026-12-01-cpu-qwen-pair-graft-paths-bs12; the run defaults: --tree-bs 12, --graft ngram,
# a draft step 8 + 1 + 6 = 15 tokens wide): Llama-3-8B / 3.2-1B shapes, random weights, 6 datasets x
# 2 prompts, 256 tokens: ar and tree fused, then tree with the persistent draft, into one folder.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $O/env.log
REPLAY=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12 TREE_BS=12 DATA_DIR=.data/eagle \
    bash paper_figures/run_2xh200.sh $O/e2e 540 \
    "2 --systems ar,tree --kernels fused" "2 --systems tree --kernels persistent" > $O/e2e.log 2>&1
grep -hE "^==|skipped|tok/s|error" $O/e2e.log | tail -12
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall|^\| system" $O/e2e/compare.md | cut -c1-240 | head -8
echo "done ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf c5.tgz c5
