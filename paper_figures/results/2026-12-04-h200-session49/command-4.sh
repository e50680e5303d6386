#!/usr/bin/env bash
# Session 49, call 4 (NOTES v273), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# 1. test_profile_host.py with its fix (the run's prompts from tests/fixtures, not ../shared).
# 2. forward_timeline.py on the 70B AWQ forward (width 8): every block of layers 2 and 40 (which SMs
#    end each launch last, and whether the same ones do launch after launch: lever (c), the tail).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c4; mkdir -p $O; START=$(date +%s)
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
timeout -k 5 120 python3 -m pytest -q -rfE --tb=short -p no:cacheprovider tests/test_profile_host.py > $O/test_profile_host.log 2>&1
echo "test_profile_host: exit $? $(tail -1 $O/test_profile_host.log) ($(( $(date +%s) - START )) s)"
for layer in 2 40; do
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/forward_timeline.py --models llama-3-70b --quant awq \
      --csv $O/timeline-l$layer.csv --blocks $O/blocks-l$layer.csv --layer $layer > $O/timeline-l$layer.md 2> $O/timeline-l$layer.log
  echo "timeline layer $layer: exit $? ($(( $(date +%s) - START )) s)"
done
grep -E "^\| (qkv|o|gate_up|down|place) " $O/timeline-l2.md | head -12
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
