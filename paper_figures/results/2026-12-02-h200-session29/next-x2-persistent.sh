#!/usr/bin/env bash
# Prepared at the end of session 29, not run: for a session lent nvidia-h200-x2. swiftspec@1+1 with
# the persistent draft beside the fused one, where the draft GPU's step is the whole critical path
# (one GPU: the draft time a round 4-7% under fused's, session29/c5). 8B / 1B shapes, random bf16
# weights, replayed bs 12 with grafting, 6 datasets x 4 prompts, counterbalanced (P F then F P in
# two folders; a throwaway run first); e2e_checks.py on each folder (link wait, first round).
# Then the persistent draft's losslessness with two GPUs (lossless_gpu.sh: the split 1+1 rows too),
# one prompt a dataset, in what is left. Carry [".data"]. ~9.5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/x2p; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda \
    --dtype bfloat16 --systems tree --kernels fused --acceptance replay:$R --datasets qa --limit 1 \
    --max-new-tokens 32 --data-dir .data/eagle --out /tmp/throwaway > $O/throwaway.log 2>&1
for half in "a persistent fused" "b fused persistent"; do
  set -- $half
  REPLAY=$R TREE_BS=12 DATA_DIR=$PWD/.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$1 210 \
      "4 --systems swiftspec --split 1+1 --kernels $2" "4 --systems swiftspec --split 1+1 --kernels $3" \
      > $O/e2e-$1.log 2>&1
  grep -hE "^==|skipped|error" $O/e2e-$1.log | tail -4
  python3 -m swiftspec_bench.cli compare $O/e2e-$1 --format markdown > $O/e2e-$1/compare.md 2>&1
  grep -E "\| overall " $O/e2e-$1/compare.md | cut -c30-220
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e-$1 > $O/checks-$1.md 2>&1; tail -6 $O/checks-$1.md
done
MODELS=llama-3.2-1b KERNELS=persistent LIMIT=1 BUDGET_S=$(( 560 - ($(date +%s) - START) )) \
    bash paper_figures/lossless_gpu.sh $O/lossless > $O/lossless.log 2>&1
echo "lossless exit $? ($(( $(date +%s) - START )) s)"; tail -14 $O/lossless.log
cd $OUT && tar czf x2p.tgz x2p
