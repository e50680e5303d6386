#!/usr/bin/env bash
# Session 26, call 12 (NOTES v171), one H200, main: can the persistent probe's blocks (one an SM,
# its shared memory) run in clusters of 1..16 with every block resident (a grid barrier with a
# timeout)? ~30 s warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c12; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/cluster_occupancy.py > $O/clusters.md 2> $O/clusters.log
echo "exit $?"; cat $O/clusters.md; tail -5 $O/clusters.log
