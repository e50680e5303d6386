#!/usr/bin/env bash
# Session 32, call 6 (one H200, no carry): persistent.cu's split (x's slice copies, the barriers'
# setup, the stamps and the counters' reset moved to persistent_ring.cuh as functions: the same
# instruction count in both builds, ptxas alike, but other bytes: 1970 of 12160 instructions in the
# 8B target build, 9459 of 9632 in the 1B build). (1) the GPU tests of both builds; (2) ab_replay,
# the 1B persistent forward at width 9 and the 8B target build at width 8 (B: split-reverse.patch,
# the kernel before the split; B - A > 0: the split faster), bits compared; each step as far as the
# session's last device minutes reach.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O; P=paper_figures/results/2026-12-02-h200-session32
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py tests/test_persistent_forward.py > $O/tests.log 2>&1
echo "tests exit $? ($(( $(date +%s) - START )) s): $(tail -n 1 $O/tests.log)"; grep -E "^(FAILED|ERROR)" $O/tests.log | head -6
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/ab_replay.py --patch $P/split-reverse.patch --models llama-3.2-1b \
    --width 9 --kernels persistent --rounds 60 > $O/ab-1b.md 2> $O/ab-1b.log
echo "ab 1b exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/ab-1b.md | cut -d'|' -f2-17; tail -n 2 $O/ab-1b.log
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/ab_replay.py --patch $P/split-reverse.patch --models llama-3-8b \
    --width 8 --kernels persistent --rounds 60 > $O/ab-8b.md 2> $O/ab-8b.log
echo "ab 8b exit $? ($(( $(date +%s) - START )) s)"; tail -n 1 $O/ab-8b.md | cut -d'|' -f2-17; tail -n 2 $O/ab-8b.log
# No tarball: six files, each back even if the session's device time ends the call early.
