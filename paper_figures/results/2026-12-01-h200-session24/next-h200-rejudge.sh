#!/usr/bin/env bash
# After next-h200.sh (only if its main-against-itself intervals contain 0): ab_replay.py on cuda/-only
# variants the rows called flat (NOTES, "For the next session" item 3): session21's attn-reorder.patch
# (v132) at the 1B (width 9) and the 8B (width 8), attn-trigger-exit.patch (v130) at the 1B. ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/n2; mkdir -p $O; P=paper_figures/results/2026-12-01-h200-session21
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
ab() {  # ab LABEL PATCH MODEL WIDTH
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/ab_replay.py --patch "$2" --models $3 --width $4 > $O/ab-$1.md 2> $O/ab-$1.log
  echo "$1 exit $? ($(( $(date +%s) - START )) s): $(grep -E '^\| llama' $O/ab-$1.md)"; tail -2 $O/ab-$1.log
}
ab reorder-1b $P/attn-reorder.patch llama-3.2-1b 9
ab reorder-8b $P/attn-reorder.patch llama-3-8b 8
ab trigger-exit-1b $P/attn-trigger-exit.patch llama-3.2-1b 9
cd $OUT && tar czf n2.tgz n2
