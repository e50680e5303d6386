#!/usr/bin/env bash
# The next session's first call on one H200 (written at the end of the twenty-fourth; NOTES "For the
# next session"): ab_replay.py's first run with four graphs a side in Thue-Morse order. main against
# itself at the 1B (width 9) and the 8B (width 8): their intervals must contain 0 (the method's
# resolution); then swiglu-late.patch at the 1B, a known loss (+10..+14 us in v147 / v148). ~4 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/n1; mkdir -p $O; P=paper_figures/results
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
ab() {  # ab LABEL PATCH MODEL WIDTH
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/ab_replay.py --patch "$2" --models $3 --width $4 > $O/ab-$1.md 2> $O/ab-$1.log
  echo "$1 exit $? ($(( $(date +%s) - START )) s): $(grep -E '^\| llama' $O/ab-$1.md)"; tail -2 $O/ab-$1.log
}
ab self-1b '' llama-3.2-1b 9
ab self-8b '' llama-3-8b 8
ab late-1b $P/2026-12-01-h200-session24/swiglu-late.patch llama-3.2-1b 9
cd $OUT && tar czf n1.tgz n1
