#!/usr/bin/env bash
# Prepared at the end of session 29 (NOTES "For the next session (written at the end of the
# twenty-ninth)"), not run: one H200, main at the commit given; carry [".data"]. ~4 min.
# (1) step_host.py: the parts of a draft step's host time on the GPU machine (the forward call cost
#     63-126 us in call 6, staged.write ~15 of it on the CPU; each kernel set measured twice);
# (2) tree with the persistent draft against fused, qa / gsm8k / humaneval x 4, a throwaway run
#     first, then P F F P (two folders), with main's host path and our topk kernel under both.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nk; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/step_host.py $O/step-host.md > $O/step-host.log 2>&1
echo "step_host exit $? ($(( $(date +%s) - START )) s)"; cat $O/step-host.md; tail -2 $O/step-host.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda \
    --dtype bfloat16 --systems tree --kernels fused --acceptance replay:$R --datasets qa --limit 1 \
    --max-new-tokens 32 --data-dir .data/eagle --out /tmp/throwaway > $O/throwaway.log 2>&1
for half in "a persistent fused" "b fused persistent"; do
  set -- $half
  REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$1 110 \
      "4 --systems tree --kernels $2 --datasets qa,gsm8k,humaneval" \
      "4 --systems tree --kernels $3 --datasets qa,gsm8k,humaneval" > $O/e2e-$1.log 2>&1
  python3 -m swiftspec_bench.cli compare $O/e2e-$1 --format markdown > $O/e2e-$1/compare.md 2>&1
  echo "e2e $1 ($(( $(date +%s) - START )) s)"; grep -E "\| overall " $O/e2e-$1/compare.md | cut -c30-200
done
cd $OUT && tar czf nk.tgz nk
