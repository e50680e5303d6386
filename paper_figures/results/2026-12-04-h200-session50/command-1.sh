#!/usr/bin/env bash
# Session 50, call 1 (NOTES v276), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# 1. epilogue-inputs.patch A/B (paper_figures/awq_ab.sh: fingerprints, 70B AWQ forward pairs, AWQ GPU
#    tests, awq_fp16_probe). 2. The patched forward's timeline (layer 2), to set its epilogues beside
#    session 49's call-4/timeline-l2.md (the base's).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-04-h200-session50
O=$OUT/c1; START=$(date +%s)
bash paper_figures/awq_ab.sh $O $HERE/epilogue-inputs.patch
if [ $(( $(date +%s) - START )) -lt 470 ]; then  # the working tree is the patched one now
  PYTHONPATH=. timeout -k 5 100 python3 paper_figures/forward_timeline.py --models llama-3-70b --quant awq \
      --csv $O/timeline-l2.csv --blocks $O/blocks-l2.csv --layer 2 > $O/timeline-l2.md 2> $O/timeline-l2.log
  echo "timeline layer 2 (new): exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (qkv|o|gate_up|down|place) " $O/timeline-l2.md | head -12
fi
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
