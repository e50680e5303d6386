#!/usr/bin/env bash
# Call 7 of the seventeenth session (nvidia-h200, the last ~4.8 device minutes; NOTES v109): the 70B
# AWQ forward's ops by marginal cost under PDL (forward_ablation.py --quant awq, one round).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c7; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 170 python3 paper_figures/forward_ablation.py --models llama-3-70b --quant awq --width 8 \
    --rounds 1 --csv $O/ablation-llama-3-70b-awq-w8.csv > $O/ablation-llama-3-70b-awq-w8.md 2> $O/ablation-llama-3-70b-awq-w8.log
echo "ablation exit $?"; cat $O/ablation-llama-3-70b-awq-w8.md
