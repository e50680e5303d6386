#!/usr/bin/env bash
# Prepared in session 32, not run: for a session lent nvidia-h200-x2 (carry [".data"]), after
# session31/next-x2-interleave.sh. Since session 32 (v198-v200) a run at --tree-bs 8 puts the 8B
# target on the persistent kernel too (every verification 8 wide): on one H200 tree 1.06x and
# lockstep swiftspec 1.04x fused that way. The question for two GPUs: swiftspec@1+1 at bs 8 with
# both forwards persistent (its target's verification -4%, its draft's step faster: a larger d)
# against swiftspec@1+1 at bs 12 fused (session 31's bar run), query by query within each run and
# across the two folders by e2e_checks --baseline-folder. 8B / 1B shapes, random bf16 weights,
# replayed from the real Qwen pair at each bs (bs 8: graft-paths holds d = 2..8; bs 12: -bs12, d = 2..8
# since session 32), 6 datasets x 3 prompts, 256 new tokens, after a throwaway run. ~8 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/x2b8; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16 --tree-w 8
        --chain-k 7 --data-dir .data/eagle --max-new-tokens 256 --split 1+1 --datasets all --limit 3)
B8=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths
B12=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --acceptance replay:$B8 --tree-bs 8 --systems tree --kernels fused \
    --datasets qa --limit 1 --max-new-tokens 32 --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
timeout -k 5 270 python3 -m swiftspec_bench.cli run "${COMMON[@]}" --acceptance replay:$B8 --tree-bs 8 \
    --systems ar,swiftspec --kernels fused,auto --interleave --out $O/bs8 > $O/bs8.log 2>&1
echo "bs 8 run exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/bs8.log
timeout -k 5 $(( 560 - ($(date +%s) - START) )) python3 -m swiftspec_bench.cli run "${COMMON[@]}" \
    --acceptance replay:$B12 --tree-bs 12 --systems swiftspec --kernels fused --out $O/bs12 > $O/bs12.log 2>&1
echo "bs 12 run exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/bs12.log
for f in bs8 bs12; do python3 -m swiftspec_bench.cli compare $O/$f --format markdown > $O/$f/compare.md 2>&1; done
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/bs8 --ar ar:fused --baseline swiftspec@1+1:graft:fused > $O/paired-bs8.md 2>&1
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/bs8 --ar ar:fused --baseline swiftspec@1+1:graft:fused \
    --baseline-folder $O/bs12 > $O/paired-bs8-vs-bs12.md 2>&1
tail -n 4 $O/paired-bs8.md $O/paired-bs8-vs-bs12.md | cut -c1-170
find $O -name results.parquet -delete
cd $OUT && tar czf x2b8.tgz x2b8
