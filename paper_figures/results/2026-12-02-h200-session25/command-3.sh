#!/usr/bin/env bash
# Call 3 of the twenty-fifth session (nvidia-h200): paper_figures/persistent_mlp.py, the persistent
# forward's first measurement (NOTES v149). M = 8 and M = 1, 16 layers of the 1B's MLP.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c3; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for m in 8 1; do  # (the ring 1024x3: the default then)
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/persistent_mlp.py --rows $m > $O/mlp-m$m.md 2> $O/mlp-m$m.log
  echo "m=$m exit $?"; cat $O/mlp-m$m.md; tail -3 $O/mlp-m$m.log
done
cd $OUT && tar czf c3.tgz c3
