#!/usr/bin/env bash
# For the next session lent nvidia-h200-x2 (written in the fifteenth session; not run): issue 11's
# pair as session14/command-4.sh runs it (Llama-3-70B AWQ target / Llama-3.2-3B bf16 draft shapes,
# random weights, fused, bs 8, grafting, 256 tokens; swiftspec@1+1 and tree@tp2 on 6 datasets x 10
# prompts, ar on x 2), at this session's AWQ GEMM (the 70B forward 14.5 -> 13.7-13.9 ms, NOTES
# v92-v93) and with acceptance replayed at rates (the paths folder first, NOTES v85). Carry
# [".data"]. ~9.5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/pair-rates; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths \
    paper_figures/results/2026-11-30-cpu-qwen-pair-graft paper_figures/results/cpu-qwen-pair > $O/replay.log
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq --kernels fused" REPLAY=$O/replay TREE_BS=8 \
    DATA_DIR=$ROOT/.data/eagle bash paper_figures/run_2xh200.sh $O/pair $(( 580 - ($(date +%s) - START) )) \
    "10 --systems swiftspec --split 1+1" "10 --systems tree --tp 2" "2 --systems ar" > $O/pair.log 2>&1
grep -hE "^==|skipped|tok/s" $O/pair.log | tail -9
python3 -m swiftspec_bench.cli compare $O/pair --format markdown > $O/pair/compare.md 2>&1
grep -E "overall" $O/pair/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/pair > $O/pair-checks.md 2>&1; tail -6 $O/pair-checks.md
rm -rf $O/replay
cd $OUT && tar czf all.tgz pair-rates
