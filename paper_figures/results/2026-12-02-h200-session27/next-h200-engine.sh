#!/usr/bin/env bash
# Prepared at the end of session 27 (NOTES v187), not run: on branch persistent-engine (check it out
# first; it holds tma-cache's and tree-attention's changes, none run yet), one H200. The persistent
# forward in the engine: its GPU tests (logits against the torch ops on a 1B-shaped tree step, every
# decoder lossless with it as the draft's forward), then the kernel table's forward and draft_step
# rows for Llama-3.2-1B, ours against persistent: issue 10's draft-step bar (<= 1.6x its floor).
# ~4 min warm (two 1B engines of random weights in the tests, one in the bench).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/n3; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
timeout -k 5 240 python3 -m pytest -q -x -p no:cacheprovider tests/test_persistent_forward.py > $O/tests.log 2>&1
echo "tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests.log)"
timeout -k 5 200 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 --context 1000 \
    --ops forward,draft_step --impl ours,persistent --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; tail -3 $O/kernels.log
grep -E "^\| (op|forward|draft_step) " $O/kernels/kernels.md
cd $OUT && tar czf n3.tgz n3
