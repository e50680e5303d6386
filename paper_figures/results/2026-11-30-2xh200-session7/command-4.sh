#!/usr/bin/env bash
# Seventh session, call 4 (nvidia-h200-x2): issue 10's end-to-end table at this commit on the 70
# queries of session 5's s4 and session 6's c4 (--limit 10: 6 datasets x 10 prompts + mt_bench's
# second turns), fused kernels, 8B/1B shapes, random bf16 weights, replayed acceptance, bs 8,
# grafting, 256 tokens: tree@tp2, then the same tree@tp2 on 14 of them from a snapshot of
# 6d835ac (.cache/ab/pinned-keep: the only difference is KVCache.keep through pinned rows and
# index_select / index_copy_), then swiftspec@1+1 (measured d), ar (2 prompts a dataset), and
# chain@tp2 and ar@tp2 (2 prompts a dataset) while the deadline allows.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-bs8 $G paper_figures/results/cpu-qwen-pair > $O/replay.log
export REPLAY=$O/replay-bs8 TREE_BS=8 DATA_DIR=$ROOT/.data/eagle
left() { echo $(( 540 - ($(date +%s) - START) )); }
bash paper_figures/run_2xh200.sh $O/fused $(left) "10 --systems tree --tp 2 --kernels fused" > $O/fused.log 2>&1
(cd .cache/ab/pinned-keep && SWIFTSPEC_COMMIT=6d835ac bash paper_figures/run_2xh200.sh $O/pinned-keep $(left) \
    "2 --systems tree --tp 2 --kernels fused") > $O/pinned-keep.log 2>&1
bash paper_figures/run_2xh200.sh $O/fused $(left) "10 --systems swiftspec --split 1+1 --kernels fused" \
    "2 --systems ar --kernels fused" "2 --systems chain --tp 2 --kernels fused" "2 --systems ar --tp 2 --kernels fused" \
    >> $O/fused.log 2>&1
grep -hE "^==|skipped" $O/fused.log $O/pinned-keep.log
python3 -m swiftspec_bench.cli compare $O/fused --format markdown > $O/fused/compare.md 2>&1
grep -E "overall" $O/fused/compare.md | cut -d'|' -f5-17
python3 -m swiftspec_bench.cli compare $O/pinned-keep --format markdown > $O/pinned-keep/compare.md 2>&1
grep -E "overall" $O/pinned-keep/compare.md | cut -d'|' -f5-17
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/fused > $O/checks.md 2>&1; cat $O/checks.md
rm -rf $O/replay-bs8
cd $OUT && tar czf all.tgz c4
