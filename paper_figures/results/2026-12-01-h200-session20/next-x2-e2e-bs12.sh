#!/usr/bin/env bash
# For a session lent nvidia-h200-x2 (written in the twentieth; not run): issue 10's end-to-end table
# at the decoders' default verification budget, bs 12 (cli.DEFAULT_TREE_BS), as the sixteenth's
# next-x2-e2e-bs16.sh runs it at 16: acceptance replayed at rates from the real pair's bs 12 rows
# (results/2026-12-01-cpu-qwen-pair-graft-paths-bs12), swiftspec@1+1 and tree@tp2 on 6 datasets x
# 10 prompts, ar and (since session 31, when the source gained chain rows) chain@tp2 on x 2. 8B /
# 1B shapes, random bf16 weights, fused (with merge-rounds: the 8B verification at 12 rows ~1%
# faster), grafting, 256 tokens. Carry [".data"]. ~9 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/e2e-bs12; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
export REPLAY=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12 TREE_BS=12 DATA_DIR=$ROOT/.data/eagle
bash paper_figures/run_2xh200.sh $O/e2e $(( 570 - ($(date +%s) - START) )) \
    "10 --systems swiftspec --split 1+1 --kernels fused" "10 --systems tree --tp 2 --kernels fused" \
    "2 --systems ar --kernels fused" "2 --systems chain --tp 2 --kernels fused" > $O/e2e.log 2>&1
grep -hE "^==|skipped|tok/s" $O/e2e.log | tail -12
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e > $O/checks.md 2>&1; cat $O/checks.md
cd $OUT && tar czf all.tgz e2e-bs12
