#!/usr/bin/env bash
# Session 31, call 4 (one H200, carry [".data"]), main at the commit given (persistent-target merged):
# (1) GPU tests: the target build, the 1B persistent engine, the fused attention (its item in
# attention_item.cuh) and forward; (2) the kernels table's 8B forward rows, ours and persistent,
# widths 1, 8, 12, 16; (3) chain, tree, swiftspec under fused and persistent, interleaved, 4 datasets
# x 2 (does the persistent draft's 1.05x hold beyond tree?); (4) the 1B persistent layer probe.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/s4; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
timeout -k 5 270 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py tests/test_persistent_forward.py \
    tests/test_gpu_fused.py tests/test_kernel_attention.py > $O/gpu-tests.log 2>&1
echo "GPU tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/gpu-tests.log)"; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 1,8,12,16 --context 1000 --ops forward \
    --impl ours,persistent --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| forward" $O/kernels/kernels.md
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
timeout -k 5 $(( 540 - ($(date +%s) - START) )) python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems chain,tree,swiftspec \
    --kernels fused,persistent --interleave --datasets qa,gsm8k,humaneval,sum --limit 2 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -1 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
grep -E "overall" $O/e2e/compare.md | cut -c1-150
for s in chain tree:graft swiftspec:graft; do
  PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar $s:fused --baseline $s:fused > $O/paired-${s%%:*}.md 2>&1
  grep -E "persistent" $O/paired-${s%%:*}.md | tail -1
done
PYTHONPATH=. timeout -k 5 $(( 590 - ($(date +%s) - START) )) python3 paper_figures/persistent_mlp.py --attention --rows 9 --rings 1024x4 > $O/probe-1b.md 2> $O/probe-1b.log
echo "1b probe exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (ours|persistent 1024x4, deep \|)" $O/probe-1b.md | cut -c1-120
find $O -name results.parquet -delete
cd $OUT && tar czf s4.tgz s4
