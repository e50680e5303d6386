#!/usr/bin/env bash
# Call 5 of the twenty-fourth session (nvidia-h200; NOTES v146): gate_up (gemm_swiglu) loads its first
# weights after its PDL wait, every other GEMM before it as today (swiglu-late.patch). GPU tests of
# the patched tree (gemm_swiglu, the fused forward), rows 1B and 8B ABAB, the 1B timeline.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O; HERE=$PWD/paper_figures/results/2026-12-01-h200-session24
for v in base late; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml pyproject.toml /tmp/$v/; done
(cd /tmp/late && patch -s -p1 < $HERE/swiglu-late.patch) && echo patched
(cd /tmp/late && PYTHONPATH=. timeout -k 5 150 python3 -m pytest -q -x -p no:cacheprovider tests/test_kernel_gemm_swiglu.py \
    tests/test_fused_forward.py > $O/tests-late.log 2>&1); echo "tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-late.log)"
run() {  # run TREE LABEL
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b,llama-3-8b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$2 > $O/kernels-$2.log 2>&1)
  echo "$2 exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base base-a; run late late-a; run base base-b; run late late-b
(cd /tmp/late && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3.2-1b --width 9 \
    > $O/timeline-late.md 2> $O/timeline-late.log)
echo "timeline $(grep -o 'last end [0-9.]* us' $O/timeline-late.md)"; grep -A6 "^| place | reach" $O/timeline-late.md
cd $OUT && tar czf c5.tgz c5
