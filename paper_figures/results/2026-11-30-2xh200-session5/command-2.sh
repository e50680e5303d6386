#!/usr/bin/env bash
# Fifth session, call 2 (nvidia-h200-x2). 1) GPU tests of what is new since call 1: the top-k
# kernel, gemm after its main loop moved to gemm_tile.cuh, gemm_swiglu, the fused GEMM + LL
# all-reduce, the all-reduce (CHUNK 128), the fused decoders. 2) Kernel rows: allreduce,
# gemm_allreduce, forward and draft_step (8B, 1B). 3) profile_split. 4) A/B of swiftspec@1+1 at
# --limit 2: call B's commit 4d9861f and call 1's e31943e (snapshots in .cache/ab, carried),
# then this commit; each runs its own code (cwd = its snapshot).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/s2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_topk.py tests/test_kernel_gemm.py \
    tests/test_kernel_gemm_swiglu.py tests/test_kernel_gemm_allreduce.py tests/test_kernel_allreduce.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
TESTS=$?
echo "tests exit $TESTS ($(( $(date +%s) - START )) s)"; grep -E "passed|failed|FAILED|ERROR" $O/gpu-tests.log | tail -12
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1,2 --m 8 --context 1000 \
    --ops allreduce,gemm_allreduce,forward,draft_step --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (allreduce|gemm_allreduce|forward|draft_step)" $O/kernels/kernels.md | head -30
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
for v in old mid new; do
  python3 -m swiftspec_bench.cli compare $O/ab-$v --format markdown > $O/ab-$v/compare.md 2>&1
  echo "$v: $(grep overall $O/ab-$v/compare.md | cut -d'|' -f5-17)"
done
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz s2
