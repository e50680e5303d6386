#!/usr/bin/env bash
# Fifth session, call 4 (nvidia-h200-x2): the baselines at this commit beside call 3's
# swiftspec@1+1 (70 queries, s3/fused, resumed here): tree@tp2, ar, chain@tp2, ar@tp2, fused
# kernels (with gemm_swiglu, the fused GEMM + LL all-reduce under TP, the top-k kernel), same
# settings (8B/1B shapes, random bf16 weights, replayed acceptance, bs 8, grafting, 256 tokens).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/s4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
cp -r paper_figures/results/2026-11-30-2xh200-session5/s3/fused $O/fused
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
REPLAY=$O/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $O/fused 480 \
    "10 --systems tree --tp 2" "10 --systems ar" "10 --systems chain --tp 2" "10 --systems ar --tp 2" > $O/fused.log 2>&1
grep -E "^==|skipped" $O/fused.log
python3 -m swiftspec_bench.cli compare $O/fused --format markdown > $O/fused/compare.md 2>&1
grep -E "overall" $O/fused/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/fused > $O/checks.md 2>&1; cat $O/checks.md
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz s4
