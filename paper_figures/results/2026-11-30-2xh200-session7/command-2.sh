#!/usr/bin/env bash
# Seventh session, call 2 (nvidia-h200-x2). 1) profile_split with its chrome traces kept (gzipped):
# where a split round's time goes on the host between the forwards. 2) The d rule of v30 (d = the
# steps that end within 10% of a verification, refitted per request both ways) on the 28 queries
# of call 1 (--limit 4; 8B/1B shapes, random bf16 weights, replayed acceptance, grafting, 256
# tokens): swiftspec@1+1 (measured d) and tree@tp2 at bs 12 and bs 8, interleaved against drift.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nproc; lscpu | grep -E "Model name|MHz"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 \
    --graft ngram --kernels fused --out $O/profile > $O/profile.log 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -hE "^(alone|both|request|draft parts)" $O/profile/rank*.txt
gzip -9 $O/profile/trace-*.json; ls -la $O/profile
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-bs8 $G paper_figures/results/cpu-qwen-pair > $O/replay.log
B12=paper_figures/results/2026-11-30-cpu-qwen-pair-graft-bs12
run() {  # run BS REPLAY STEP
  local left=$(( 540 - ($(date +%s) - START) ))
  REPLAY=$2 TREE_BS=$1 bash paper_figures/run_2xh200.sh $O/bs$1 $left "$3" >> $O/bs$1.log 2>&1
}
run 12 $B12 "4 --systems swiftspec --split 1+1 --kernels fused"
run 8 $O/replay-bs8 "4 --systems tree --tp 2 --kernels fused"
run 8 $O/replay-bs8 "4 --systems swiftspec --split 1+1 --kernels fused"
run 12 $B12 "4 --systems tree --tp 2 --kernels fused"
grep -hE "^==|skipped" $O/bs8.log $O/bs12.log
for r in bs8 bs12; do
  python3 -m swiftspec_bench.cli compare $O/$r --format markdown > $O/$r/compare.md 2>&1
  grep -E "overall" $O/$r/compare.md | cut -d'|' -f2-17
done
for r in bs8 bs12; do PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/$r > $O/$r/checks.md 2>&1; cat $O/$r/checks.md; done
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/bs12 --baseline-folder $O/bs8 > $O/checks-bs12-vs-tree-bs8.md 2>&1
cat $O/checks-bs12-vs-tree-bs8.md
rm -rf $O/replay-bs8
cd $OUT && tar czf all.tgz c2
