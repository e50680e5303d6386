#!/usr/bin/env bash
# Session 30, call 3 (v193): the persistent o_proj + MLP blocks in the 8B fused forward. One H200,
# no carry. (1) GPU tests: the blocks (kernel against reference, poisoned; row invariance; decoders
# exact at 8B layer shapes), the 1B persistent engine (the kernel's io change), the fused forward;
# (2) the 1B persistent layer probe (bitwise checks, ~49.2-49.4 us before); (3) blocks_ab.py: the 8B
# forward on / off at widths 1, 8, 12, 16; (4) the kernels table's forward rows for the 8B (ours).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O; P=paper_figures/results/2026-12-02-h200-session30
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log; nvidia-smi >> $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_blocks.py > $O/tests-blocks.log 2>&1
echo "blocks tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-blocks.log)"; grep -E "^(FAILED|ERROR)|Error" $O/tests-blocks.log | head -8
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/persistent_mlp.py --attention --rows 9 --rings 1024x4 > $O/probe-1b.md 2> $O/probe-1b.log
echo "1b probe exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (ours|persistent 1024x4, deep \|)" $O/probe-1b.md | cut -c1-120
PYTHONPATH=. timeout -k 5 200 python3 $P/blocks_ab.py $O/blocks-ab.md > $O/blocks-ab.log 2>&1
echo "blocks_ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/blocks-ab.md; tail -3 $O/blocks-ab.log
timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 1,8 --context 1000 --ops forward \
    --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "forward" $O/kernels/kernels.md | head -4
timeout -k 5 150 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_persistent_forward.py tests/test_gpu_fused.py > $O/tests-other.log 2>&1
echo "1B engine + fused tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-other.log)"
cd $OUT && tar czf c3.tgz c3
