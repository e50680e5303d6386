#!/usr/bin/env bash
# Session 31, call 6 (one H200, no carry), main at the commit given (v197: each norm's g copied as
# soon as its place is free, not after the phase's barrier). (1) ab_replay, the 8B target build at
# width 8 (B: g-early-reverse.patch, the kernel before v197; B - A > 0: v197 faster); (2) GPU tests
# of the target build and the 1B persistent engine; (3) ab_replay, the 1B persistent forward, width 9.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/s6; mkdir -p $O; P=paper_figures/results/2026-12-02-h200-session31
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/ab_replay.py --patch $P/g-early-reverse.patch --models llama-3-8b \
    --width 8 --kernels persistent --rounds 150 > $O/ab-8b.md 2> $O/ab-8b.log
echo "ab 8b exit $? ($(( $(date +%s) - START )) s)"; tail -1 $O/ab-8b.md | cut -d'|' -f2-17; tail -2 $O/ab-8b.log
timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py tests/test_persistent_forward.py > $O/tests.log 2>&1
echo "tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests.log)"; grep -E "^(FAILED|ERROR)" $O/tests.log | head -6
PYTHONPATH=. timeout -k 5 80 python3 paper_figures/ab_replay.py --patch $P/g-early-reverse.patch --models llama-3.2-1b \
    --width 9 --kernels persistent --rounds 150 > $O/ab-1b.md 2> $O/ab-1b.log
echo "ab 1b exit $? ($(( $(date +%s) - START )) s)"; tail -1 $O/ab-1b.md | cut -d'|' -f2-17; tail -2 $O/ab-1b.log
cd $OUT && tar czf s6.tgz s6
