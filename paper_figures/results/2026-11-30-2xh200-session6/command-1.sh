#!/usr/bin/env bash
# Sixth session, call 1 (nvidia-h200-x2). The two unmerged helper branches, merged onto main as
# branch try-merge (snapshot in .cache/ab/merged, carried; its code wins from its own cwd), on one
# GPU each at once:
#   GPU 0: tests/test_kernel_attention.py (cluster attention), then the attention rows of main and
#          of try-merge (8B and 1B, TP 1, M 1/8/16, context 500/1000), then forward/draft_step rows of both.
#   GPU 1: tests/test_kernel_awq_gemm.py (AWQ GEMM v3), then paper_figures/awq_gemm_ab.py (v2 vs v3).
# Then, on both GPUs, main's profile_split (forward graph launch host time; the draft's step and
# settle times apart).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; M=$ROOT/.cache/ab/merged; MC=6ad34d4
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (main), try-merge $MC, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
kern() {  # kern DIR COMMIT OUTNAME OPS...
  (cd $1 && SWIFTSPEC_COMMIT=$2 timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
     --tp 1 --m 1,8,16 --context 500,1000 --ops $4 --impl ours --out $O/$3) > $O/$3.log 2>&1
  echo "$3 exit $? ($(( $(date +%s) - START )) s)"
}
( export CUDA_VISIBLE_DEVICES=0
  (cd $M && timeout -k 5 200 python3 -m pytest -q -rfE -rP -p no:cacheprovider tests/test_kernel_attention.py) > $O/gpu-tests-attention.log 2>&1
  echo "attention tests: exit $? $(tail -1 $O/gpu-tests-attention.log) ($(( $(date +%s) - START )) s)"
  kern $M $MC attn-merged attention
  kern $ROOT $SWIFTSPEC_COMMIT attn-main attention
  kern $M $MC fwd-merged forward,draft_step
  kern $ROOT $SWIFTSPEC_COMMIT fwd-main forward,draft_step
) > $O/gpu0.log 2>&1 &
( export CUDA_VISIBLE_DEVICES=1
  (cd $M && timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py) > $O/gpu-tests-awq.log 2>&1
  echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
  (cd $M && SWIFTSPEC_COMMIT=$MC PYTHONPATH=. timeout -k 5 200 python3 paper_figures/awq_gemm_ab.py --models llama-3-70b,llama-3-8b --m 1,8,16) > $O/awq-ab.md 2>&1
  echo "awq ab exit $? ($(( $(date +%s) - START )) s)"
) > $O/gpu1.log 2>&1 &
wait
cat $O/gpu0.log $O/gpu1.log
grep -hE "passed|failed" $O/gpu-tests-*.log | tail -4
for v in merged main; do echo "== attention $v"; grep -E "^\| attention" $O/attn-$v/kernels.md | head -12; done
for v in merged main; do echo "== forward $v"; grep -E "^\| (forward|draft_step)" $O/fwd-$v/kernels.md | head -12; done
cat $O/awq-ab.md | tail -30
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_split.py --prompt-len 500 --tokens 128 --draft-steps 3 \
    --graft ngram --kernels fused --out $O/profile > $O/profile.log 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -hE "^(alone|both|request|draft parts)" $O/profile/rank*.txt; rm -f $O/profile/trace-*.json
cd $OUT && tar czf all.tgz c1
