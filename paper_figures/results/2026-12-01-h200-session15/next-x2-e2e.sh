#!/usr/bin/env bash
# For the next session lent nvidia-h200-x2 (written in the fifteenth session; not run): issue 10's
# end-to-end table as session14/command-1.sh's part 2 ran it (8B / 1B shapes, random bf16 weights,
# fused, bs 8, grafting, 256 tokens; swiftspec@1+1 and tree@tp2 on 6 datasets x 10 prompts, ar,
# chain@tp2, ar@tp2 on x 2), with acceptance replayed at rates (NOTES v85): the paths folder first
# (its swiftspec d = 2..8 and tree rows carry sent_paths), chain from the older graft folder.
# Carry [".data"]. ~9.5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/e2e-rates; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-bs8 paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths \
    paper_figures/results/2026-11-30-cpu-qwen-pair-graft paper_figures/results/cpu-qwen-pair > $O/replay.log
export REPLAY=$O/replay-bs8 TREE_BS=8 DATA_DIR=$ROOT/.data/eagle
bash paper_figures/run_2xh200.sh $O/e2e $(( 570 - ($(date +%s) - START) )) \
    "10 --systems swiftspec --split 1+1 --kernels fused" "10 --systems tree --tp 2 --kernels fused" \
    "2 --systems ar --kernels fused" "2 --systems chain --tp 2 --kernels fused" "2 --systems ar --tp 2 --kernels fused" \
    > $O/e2e.log 2>&1
grep -hE "^==|skipped|tok/s" $O/e2e.log | tail -12
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e > $O/checks.md 2>&1; cat $O/checks.md
rm -rf $O/replay-bs8
cd $OUT && tar czf all.tgz e2e-rates
