#!/usr/bin/env bash
# Issues 9 and 10 on nvidia-h200-x2: the fused kernels as they stand (fourth attention kernel, PDL)
# end to end, and the verification budget with grafting. Llama-3-8B / Llama-3.2-1B shapes, random
# bf16 weights, acceptance replayed from the real Qwen pair's CPU recordings (replay-source/: the
# grafting folder's rows, then cpu-qwen-pair's; bs 12 / 16: their own folders), 6 datasets x 5
# prompts (35 queries), 256 new tokens, --kernels auto (fused).
#   bs8/:  ar, swiftspec@1+1 with and without grafting, tree@tp2
#   bs12/, bs16/: swiftspec@1+1 with grafting at --tree-bs 12 and 16
# First the attention and fused-engine GPU tests (the combine's new reduction, the draft's early
# prefill), and the attention rows.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
timeout -k 5 120 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    > $OUT/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed" $OUT/tests.log | tail -2
timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --ops attention \
    --impl ours --out $OUT/kernels > $OUT/kernels.log 2>&1
grep -E "^\| attention \| llama-3-8b" $OUT/kernels/kernels.md | cut -c1-100
PYTHONPATH=. python3 paper_figures/replay_union.py $OUT/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/replay.log
REPLAY=$OUT/replay-source bash paper_figures/run_2xh200.sh $OUT/bs8 280 "5 --systems swiftspec --split 1+1 --graft ngram" \
    "5 --systems swiftspec --split 1+1" "5 --systems ar" "5 --systems tree --tp 2" > $OUT/bs8.log 2>&1
for bs in 12 16; do
  TREE_BS=$bs REPLAY=$G-bs$bs bash paper_figures/run_2xh200.sh $OUT/bs$bs 75 \
      "5 --systems swiftspec --split 1+1 --graft ngram" > $OUT/bs$bs.log 2>&1
done
for f in bs8 bs12 bs16; do
  python3 -m swiftspec_bench.cli compare $OUT/$f --format markdown > $OUT/$f/compare.md 2>&1
  echo "== $f"; grep -E "overall|lossless" $OUT/$f/compare.md | cut -d'|' -f5-8,12-
done
