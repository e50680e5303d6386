#!/usr/bin/env bash
# Prepared at the end of session 29 (NOTES "For the next session (written at the end of the
# twenty-ninth)"), not run: one H200, main at the commit given; carry [".data"]. ~8 min.
# (1) step_host.py: the parts of a draft step's host time on the GPU machine (the forward call cost
#     63-126 us in call 6, staged.write ~15 of it on the CPU; each kernel set measured twice);
# (2) the same on graph-copy.patch (the staged block's copy captured as the graph's first node: the
#     forward call then makes no copy call), and that tree's GPU tests (the decoders' exactness with
#     graphs: a graph that read a stale block would emit other tokens);
# (3) tree with the persistent draft against fused, qa / gsm8k / humaneval x 4, a throwaway run
#     first, then P F F P (two folders), with main's host path and our topk kernel under both.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nk; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda \
    --dtype bfloat16 --systems tree --kernels fused --acceptance replay:$R --datasets qa --limit 1 \
    --max-new-tokens 32 --data-dir .data/eagle --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/step_host.py $O/step-host.md > $O/step-host.log 2>&1
echo "step_host exit $? ($(( $(date +%s) - START )) s)"; cat $O/step-host.md; tail -2 $O/step-host.log
P=$PWD/paper_figures/results/2026-12-02-h200-session29
rm -rf /tmp/gc && mkdir -p /tmp/gc && cp -r . /tmp/gc/ && (cd /tmp/gc && patch -s -p1 < $P/graph-copy.patch) && echo "graph-copy patched"
(cd /tmp/gc && PYTHONPATH=. timeout -k 5 150 python3 paper_figures/step_host.py $O/step-host-gc.md > $O/step-host-gc.log 2>&1)
echo "step_host graph-copy exit $? ($(( $(date +%s) - START )) s)"; cat $O/step-host-gc.md; tail -2 $O/step-host-gc.log
(cd /tmp/gc && PYTHONPATH=. timeout -k 5 200 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_gpu.py tests/test_persistent_forward.py \
    > $O/gc-tests.log 2>&1)
echo "graph-copy GPU tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/gc-tests.log)"
for half in "a persistent fused" "b fused persistent"; do
  set -- $half
  REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$1 110 \
      "4 --systems tree --kernels $2 --datasets qa,gsm8k,humaneval" \
      "4 --systems tree --kernels $3 --datasets qa,gsm8k,humaneval" > $O/e2e-$1.log 2>&1
  python3 -m swiftspec_bench.cli compare $O/e2e-$1 --format markdown > $O/e2e-$1/compare.md 2>&1
  echo "e2e $1 ($(( $(date +%s) - START )) s)"; grep -E "\| overall " $O/e2e-$1/compare.md | cut -c30-200
done
cd $OUT && tar czf nk.tgz nk
