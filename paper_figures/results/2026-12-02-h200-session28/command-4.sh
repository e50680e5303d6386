#!/usr/bin/env bash
# Session 28, call 4 (NOTES "Twenty-eighth session, call 4"), one H200, main at the commit given;
# carry [".data"] (the six datasets: .data/eagle). --kernels persistent as a run choice:
# (1) losslessness with real acceptance, bf16: lossless_gpu.sh with KERNELS=persistent on
#     Llama-3.2-1B shapes (draft = target, and a perturbed draft): ar (fused), chain, tree,
#     swiftspec (lockstep) with a persistent draft against ar:fused, hf-ar beside;
# (2) end to end on one GPU: Llama-3-8B / 3.2-1B shapes, random weights, acceptance replayed from
#     the real pair (results/cpu-qwen-pair, bs 8), 6 datasets x 2 prompts, 256 tokens: ar and tree
#     fused, then tree with the persistent draft, into one folder.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $O/env.log
MODELS=llama-3.2-1b KERNELS=persistent BUDGET_S=200 DATA_DIR=.data/eagle \
    bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless exit $? ($(( $(date +%s) - START )) s)"; tail -12 $O/lossless.log
bash paper_figures/run_2xh200.sh $O/e2e $(( 560 - ($(date +%s) - START) )) \
    "2 --systems ar,tree --kernels fused" "2 --systems tree --kernels persistent" > $O/e2e.log 2>&1
grep -hE "^==|skipped|tok/s|error" $O/e2e.log | tail -12
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall|^\| system" $O/e2e/compare.md | cut -c1-220 | head -8
echo "done ($(( $(date +%s) - START )) s)"
cd $OUT && tar czf c4.tgz c4
