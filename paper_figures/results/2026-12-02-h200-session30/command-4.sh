#!/usr/bin/env bash
# Session 30, call 4 (v193 with PDL): the persistent blocks launched by PDL (the producer fills the
# ring with o's pages while the attention runs; the compute warps wait) and letting the next kernel
# launch at the last phase B. One H200, no carry. (1) the blocks' GPU tests; (2) blocks_ab.py (8B
# forward on / off, widths 1, 8, 12, 16); (3) profile_forward.py on the 8B at width 8 (blocks on:
# the persistent launch's own time in the forward, the time between kernels); (4) the 1B probe and
# the 1B persistent engine's tests (its compute warps now pdl_wait: a no-op without PDL).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O; P=paper_figures/results/2026-12-02-h200-session30
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 200 python3 $P/blocks_ab.py $O/blocks-ab.md > $O/blocks-ab.log 2>&1
echo "blocks_ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/blocks-ab.md; tail -2 $O/blocks-ab.log
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_forward.py --models llama-3-8b --width 8 --context 1000 \
    --replays 5 --csv $O/profile-8b.csv > $O/profile-8b.md 2> $O/profile-8b.log
echo "profile exit $? ($(( $(date +%s) - START )) s)"; cat $O/profile-8b.md | head -30; tail -2 $O/profile-8b.log
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_blocks.py > $O/tests-blocks.log 2>&1
echo "blocks tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-blocks.log)"; grep -E "^(FAILED|ERROR)" $O/tests-blocks.log | head -8
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/persistent_mlp.py --attention --rows 9 --rings 1024x4 > $O/probe-1b.md 2> $O/probe-1b.log
echo "1b probe exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (ours|persistent 1024x4, deep \|)" $O/probe-1b.md | cut -c1-120
timeout -k 5 100 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_persistent_forward.py > $O/tests-1b.log 2>&1
echo "1B engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-1b.log)"
cd $OUT && tar czf c4.tgz c4
