#!/usr/bin/env bash
# Session 49, call 5 (NOTES v274), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# Call 4 showed gate_up's 448 blocks packed 4 a SM on 112 of 132 SMs under PDL (the SMs where o ended
# last got none). Does PDL's early residency cause the packing, and what does it cost?
# 1. forward_timeline.py, 70B AWQ, SWIFTSPEC_PDL=0: every block of layer 2.
# 2. profile_forward.py, 70B AWQ, PDL on / off, two pairs.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c5; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
SWIFTSPEC_PDL=0 PYTHONPATH=. timeout -k 5 150 python3 paper_figures/forward_timeline.py --models llama-3-70b --quant awq \
    --csv $O/timeline-pdl0.csv --blocks $O/blocks-pdl0-l2.csv --layer 2 > $O/timeline-pdl0.md 2> $O/timeline-pdl0.log
echo "timeline PDL=0: exit $? ($(( $(date +%s) - START )) s)"
grep -E "^\| (qkv|o|gate_up|down) " $O/timeline-pdl0.md | head -8
for pair in a b; do
  for pdl in 1 0; do
    SWIFTSPEC_PDL=$pdl PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py --models llama-3-70b --quant awq \
        --csv $O/profile-pdl$pdl-$pair.csv > $O/profile-pdl$pdl-$pair.md 2> $O/profile-pdl$pdl-$pair.log
    echo "profile PDL=$pdl $pair: exit $? $(grep -oE "replay [0-9.]+ us" $O/profile-pdl$pdl-$pair.md) ($(( $(date +%s) - START )) s)"
    grep -E "^\| (qkv|o|gate_up|down) " $O/profile-pdl$pdl-$pair.md | cut -d'|' -f2,5 | tr -s ' ' | tr '\n' ';'; echo
  done
done
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
