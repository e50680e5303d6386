#!/usr/bin/env bash
# Call 2 of the twentieth session (nvidia-h200): what one kernel boundary costs, PDL's
# griddepcontrol.wait against a released counter the consumer spins on (paper_figures/edge_probe.py,
# NOTES v122). ~1 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
O=$OUT/c2; mkdir -p $O
echo "commit ${SWIFTSPEC_COMMIT:-unset}, $(date -u +%FT%TZ)" > $O/env.log
for w in 10000 3000; do
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/edge_probe.py --work-ns $w > $O/edge-$w.md 2> $O/edge-$w.log
  echo "work $w exit $?"; cat $O/edge-$w.md; tail -3 $O/edge-$w.log
done
