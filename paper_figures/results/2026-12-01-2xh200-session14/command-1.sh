#!/usr/bin/env bash
# Fourteenth session, call 1 (nvidia-h200-x2, lent again after sessions 10-13; NOTES v73):
# 1) GPU 0: where the 70B AWQ verification forward's time goes (profile_forward.py --quant awq, M = 8,
#    context 1000, PDL on, then off); GPU 1 meanwhile: the AWQ GEMM's GPU tests and its kernel rows
#    (70B, M = 8).
# 2) Both GPUs: issue 10's end-to-end table at this commit (8B / 1B shapes, random bf16 weights,
#    replayed acceptance, bs 8, grafting, fused kernels, 256 tokens; 6 datasets x 10 prompts for
#    swiftspec@1+1 and tree@tp2, x 2 for ar, chain@tp2, ar@tp2), as session 7's c4 ran it.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
( export CUDA_VISIBLE_DEVICES=1
  timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py > $O/gpu-tests-awq.log 2>&1
  echo "awq tests: exit $? $(tail -1 $O/gpu-tests-awq.log) ($(( $(date +%s) - START )) s)"
  timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1 --m 8 --ops awq_gemm \
      --impl ours --out $O/kernels > $O/kernels.log 2>&1
  echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| awq" $O/kernels/kernels.md | cut -c1-110 ) > $O/gpu1.log 2>&1 &
for pdl in 1 0; do
  CUDA_VISIBLE_DEVICES=0 SWIFTSPEC_PDL=$pdl PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-70b-awq-pdl$pdl.csv > $O/profile-70b-awq-pdl$pdl.md 2> $O/profile-70b-awq-pdl$pdl.log
  echo "profile PDL $pdl exit $? ($(( $(date +%s) - START )) s)"; cat $O/profile-70b-awq-pdl$pdl.md
done
wait; cat $O/gpu1.log
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-bs8 $G paper_figures/results/cpu-qwen-pair > $O/replay.log
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
cd $OUT && tar czf all.tgz c1
