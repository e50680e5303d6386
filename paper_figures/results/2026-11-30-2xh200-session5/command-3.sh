#!/usr/bin/env bash
# Fifth session, call 3 (nvidia-h200-x2): call 2 again with the top-k kernel fixed (its block of
# 16 warps had warp 0 read 32 lists and 32 sums from shared arrays of 16: wrong logsumexps, and an
# illegal address at k >= 3 that failed every later test in the process and the draft's step).
# Each test file now runs in its own process (a fault no longer fails the files after it). The
# kernel rows are call 2's (s2/kernels, measured before any top-k call). Then profile_split, the
# A/B of swiftspec@1+1 at --limit 2 (call B's commit 4d9861f, call 1's e31943e, this one), and
# this commit's swiftspec@1+1 on all 70 queries while time is left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/s3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for f in topk gemm gemm_swiglu gemm_allreduce allreduce; do  # ~150 s in all (call A ran these in < 120)
  timeout -k 5 60 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_$f.py > $O/gpu-tests-$f.log 2>&1
  echo "$f: exit $? $(tail -1 $O/gpu-tests-$f.log)"
done
timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu_fused.py > $O/gpu-tests-fused.log 2>&1
echo "gpu_fused: exit $? $(tail -1 $O/gpu-tests-fused.log) ($(( $(date +%s) - START )) s)"
grep -h "lse max abs error" $O/gpu-tests-topk.log | head -3
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 \
    --graft ngram --kernels fused --out $O/profile > $O/profile.log 2>&1
echo "profile exit $?"; grep -hE "^(alone|both|request)" $O/profile/rank*.txt; rm -f $O/profile/trace-*.json
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
for v in old mid new; do
  LEFT=$(( 570 - ($(date +%s) - START) )); (( LEFT > 150 )) && LEFT=150
  case $v in old) DIR=$ROOT/.cache/ab/old C=4d9861f;; mid) DIR=$ROOT/.cache/ab/mid C=e31943e;; new) DIR=$ROOT C=$SWIFTSPEC_COMMIT;; esac
  (cd $DIR && python3 -c "import swiftspec_core; print('code from', swiftspec_core.__file__)"
   SWIFTSPEC_COMMIT=$C REPLAY=$O/replay-source DATA_DIR=$ROOT/.data/eagle TREE_BS=8 bash paper_figures/run_2xh200.sh $O/ab-$v $LEFT \
      "2 --systems swiftspec --split 1+1") > $O/ab-$v.log 2>&1
  grep -E "^==|skipped" $O/ab-$v.log
done
LEFT=$(( 570 - ($(date +%s) - START) ))
cp -r $O/ab-new $O/fused  # its rows are resumed
REPLAY=$O/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $O/fused $LEFT "10 --systems swiftspec --split 1+1" > $O/fused.log 2>&1
grep -E "^==|skipped" $O/fused.log
for v in old mid new; do
  python3 -m swiftspec_bench.cli compare $O/ab-$v --format markdown > $O/ab-$v/compare.md 2>&1
  echo "$v: $(grep overall $O/ab-$v/compare.md | cut -d'|' -f5-17)"
done
python3 -m swiftspec_bench.cli compare $O/fused --format markdown > $O/fused/compare.md 2>&1
echo "fused: $(grep overall $O/fused/compare.md | cut -d'|' -f5-17)"
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/fused 2>&1 | tail -2
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz s3
