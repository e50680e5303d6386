#!/usr/bin/env bash
# Session 28, call 8 (NOTES "Twenty-eighth session, call 8"), one H200, main at the commit given;
# carry [".data"]. Call 6's qa and gsm8k rounds again, the persistent step first this time (call
# 5 and 6 ran it second), 4 prompts each, under a 150 s deadline.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c8; mkdir -p $O; echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
REPLAY=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12 TREE_BS=12 DATA_DIR=.data/eagle \
    bash paper_figures/run_2xh200.sh $O/e2e 150 "4 --systems tree --kernels persistent --datasets qa,gsm8k" \
    "4 --systems tree --kernels fused --datasets qa,gsm8k" > $O/e2e.log 2>&1
grep -hE "^==|skipped|error" $O/e2e.log | tail -6
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-240
cd $OUT && tar czf c8.tgz c8
