#!/usr/bin/env bash
# Call 8 of the twenty-fifth session (nvidia-h200): persistent_mlp.py's rings (NOTES v154): call 7 again after the
# refactor of its page loop (consume), a third sample.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c8; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run ROWS RINGS
  PYTHONPATH=. timeout -k 5 200 python3 paper_figures/persistent_mlp.py --rows $1 --rings $2 > $O/mlp-m$1.md 2> $O/mlp-m$1.log
  echo "m=$1 exit $?"; cat $O/mlp-m$1.md; tail -3 $O/mlp-m$1.log
}
run 8 1024x3
run 1 1024x3
cd $OUT && tar czf c8.tgz c8
