#!/usr/bin/env bash
# Ninth session, call 4 (nvidia-h200): every launch shape of the AWQ GEMM with every row kept
# (call 3 printed the top 5), 70B at TP 1 and 2 and 8B at TP 1, M = 8, for fitting plan()'s score.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_plan_sweep.py --models llama-3-70b --tp 1,2 --top 3 \
    --csv $O/sweep-70b.csv > $O/sweep-70b.md 2> $O/sweep-70b.log
echo "sweep 70b exit $? ($(( $(date +%s) - START )) s)"; tail -10 $O/sweep-70b.md; tail -3 $O/sweep-70b.log
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/awq_plan_sweep.py --models llama-3-8b --top 3 \
    --csv $O/sweep-8b.csv > $O/sweep-8b.md 2> $O/sweep-8b.log
echo "sweep 8b exit $? ($(( $(date +%s) - START )) s)"; tail -6 $O/sweep-8b.md; tail -3 $O/sweep-8b.log
cd $OUT && tar czf all.tgz c4
