#!/usr/bin/env bash
# The one-GPU version of command.sh (nvidia-h200-x2 was not lent from 11:41 UTC): the attention,
# fused-engine and AWQ GPU tests (the tiled AWQ GEMM), the attention and 70B AWQ GEMM rows, then the verification budget with grafting where one
# GPU can measure it: swiftspec in lockstep (draft steps and verification in turn on the one GPU,
# d = 3, the recorded d) at --tree-bs 8, 12, 16 with grafting, and at 8 without, beside ar and serial
# tree. Llama-3-8B / Llama-3.2-1B shapes, random bf16 weights, acceptance replayed from the real
# Qwen pair's CPU recordings (bs 8: replay-source/; bs 12 / 16: their own folders), 6 datasets x 5
# prompts (35 queries), 256 new tokens, --kernels auto (fused). Everything is tarred into all.tgz.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    tests/test_kernel_awq_gemm.py tests/test_awq.py > $OUT/tests.log 2>&1
echo "tests exit $?"; grep -E "passed|failed" $OUT/tests.log | tail -2; grep -E "^FAILED" $OUT/tests.log | head
timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 --ops attention \
    --impl ours --out $OUT/kernels > $OUT/kernels.log 2>&1
timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b --tp 1,2 --m 8 --ops awq_gemm \
    --impl ours --out $OUT/kernels >> $OUT/kernels.log 2>&1
grep -E "^\| (attention \| llama-3-8b|awq_gemm)" $OUT/kernels/kernels.md | cut -c1-100
PYTHONPATH=. python3 paper_figures/replay_union.py $OUT/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/replay.log
REPLAY=$OUT/replay-source bash paper_figures/run_2xh200.sh $OUT/bs8 ${BS8_S:-210} \
    "5 --systems swiftspec --draft-steps 3 --graft ngram" "5 --systems swiftspec --draft-steps 3" "5 --systems ar" \
    "5 --systems tree" > $OUT/bs8.log 2>&1
for bs in 12 16; do
  TREE_BS=$bs REPLAY=$G-bs$bs bash paper_figures/run_2xh200.sh $OUT/bs$bs ${BS_S:-50} \
      "5 --systems swiftspec --draft-steps 3 --graft ngram" > $OUT/bs$bs.log 2>&1
done
for f in bs8 bs12 bs16; do
  python3 -m swiftspec_bench.cli compare $OUT/$f --format markdown > $OUT/$f/compare.md 2>&1
  echo "== $f"; grep -E "overall|lossless" $OUT/$f/compare.md | cut -d'|' -f5-8,12-
done
grep -hE "^== |skipped|error" $OUT/bs*.log | head -20
rm -rf $OUT/replay-source
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
# Run: export SWIFTSPEC_COMMIT=28c4e49 && bash paper_figures/results/2026-11-30-2xh200-e2e/command-1gpu.sh
# (11:58 UTC, nvidia-h200), outputs unpacked in one-gpu/: 156 tests passed; bs8 ran swiftspec:d3
# with and without grafting and ar on 35 queries (serial tree skipped at the deadline); bs12 33 and
# bs16 29 queries before theirs.
