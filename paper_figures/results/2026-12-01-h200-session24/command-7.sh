#!/usr/bin/env bash
# Call 7 of the twenty-fourth session (nvidia-h200; NOTES v148): ab_replay.py with four graphs
# captured A, B, B, A: main against itself, then against swiglu-late.patch, 1B width 9.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c7; mkdir -p $O; P=paper_figures/results
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
ab() {  # ab LABEL PATCH MODEL WIDTH
  PYTHONPATH=. timeout -k 5 100 python3 paper_figures/ab_replay.py --patch "$2" --models $3 --width $4 > $O/ab-$1.md 2> $O/ab-$1.log
  echo "$1 exit $? ($(( $(date +%s) - START )) s): $(grep -E '^\| llama' $O/ab-$1.md)"
}
ab self-1b '' llama-3.2-1b 9
ab late-1b $P/2026-12-01-h200-session24/swiglu-late.patch llama-3.2-1b 9
cd $OUT && tar czf c7.tgz c7
