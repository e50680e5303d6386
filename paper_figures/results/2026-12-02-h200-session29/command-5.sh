#!/usr/bin/env bash
# Session 29, call 5: tree with the persistent draft against the fused one on all six datasets,
# 4 prompts each (mt_bench: 2 turns), 8B / 1B shapes, replayed bs 12 with grafting; counterbalanced
# (a throwaway run first, then F P into e2e-a and P F into e2e-b); then the persistent draft's
# losslessness (lossless_gpu.sh, 1B, real acceptance, bf16) in what is left. One H200, carry [".data"].
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nh; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda \
    --dtype bfloat16 --systems tree --kernels fused --acceptance replay:$R --datasets qa --limit 1 \
    --max-new-tokens 32 --data-dir .data/eagle --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
e2e() {  # e2e HALF FIRST SECOND
  REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$1 190 \
      "4 --systems tree --kernels $2" "4 --systems tree --kernels $3" > $O/e2e-$1.log 2>&1
  grep -hE "^==|skipped|error" $O/e2e-$1.log | tail -4
  python3 -m swiftspec_bench.cli compare $O/e2e-$1 --format markdown > $O/e2e-$1/compare.md 2>&1
  grep -E "^\| llama" $O/e2e-$1/compare.md | cut -c30-200
}
e2e a fused persistent
e2e b persistent fused
LEFT=$(( 560 - ($(date +%s) - START) ))
echo "lossless budget $LEFT s"
MODELS=llama-3.2-1b KERNELS=persistent LIMIT=1 BUDGET_S=$LEFT bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless exit $? ($(( $(date +%s) - START )) s)"; tail -12 $O/lossless.log
cd $OUT && tar czf nh.tgz nh
