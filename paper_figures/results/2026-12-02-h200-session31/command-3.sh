#!/usr/bin/env bash
# Session 31, call 3 (one H200, carry [".data"]), main at the commit given. v196 on
# session31/persistent-target.patch: (1) GPU tests of the target build and the 1B persistent engine
# (load_x's copies now over warp 0's lanes); (2) target_ab.py: base (x lanes 1) against x lanes 32,
# and with L2_AHEAD 4, 8, 16, widths 8 and 12, one process; (3) main: the persistent draft against
# fused, interleaved, all six datasets x 4 (call 2 ran qa, gsm8k, humaneval x 4: 1.06x).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
ROOT=$PWD; START=$(date +%s); O=$OUT/s3; mkdir -p $O; P=$ROOT/paper_figures/results/2026-12-02-h200-session31
echo "commit $SWIFTSPEC_COMMIT (+ session31/persistent-target.patch for (1) and (2)), $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/pt && mkdir -p /tmp/pt && cp -r . /tmp/pt/ && cd /tmp/pt && patch -s -p1 < $P/persistent-target.patch && echo "persistent-target patched"
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
timeout -k 5 230 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py tests/test_persistent_forward.py > $O/tests.log 2>&1
echo "tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests.log)"; grep -E "^(FAILED|ERROR)" $O/tests.log | head -8
PYTHONPATH=. timeout -k 5 190 python3 $P/target_ab.py --widths 8,12 --rounds 150 > $O/target-ab.md 2> $O/target-ab.log
echo "target_ab exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| [0-9]" $O/target-ab.md | cut -d'|' -f2-9,13-15; tail -2 $O/target-ab.log
cd $ROOT && python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
COMMON=(--target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16
        --acceptance replay:$R --tree-bs 12 --tree-w 8 --chain-k 7 --data-dir .data/eagle --max-new-tokens 256)
timeout -k 5 $(( 590 - ($(date +%s) - START) )) python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree \
    --kernels fused,persistent --interleave --datasets alpaca,mt_bench,sum,qa,gsm8k,humaneval --limit 4 --out $O/e2e > $O/e2e.log 2>&1
echo "interleaved run exit $? ($(( $(date +%s) - START )) s)"; tail -1 $O/e2e.log
python3 -m swiftspec_bench.cli compare $O/e2e --format markdown > $O/e2e/compare.md 2>&1
PYTHONPATH=. python3 paper_figures/e2e_checks.py $O/e2e --ar tree:graft:fused --baseline tree:graft:fused > $O/paired.md 2>&1; tail -3 $O/paired.md
find $O -name results.parquet -delete
cd $OUT && tar czf s3.tgz s3
