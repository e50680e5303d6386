#!/usr/bin/env bash
# Session 53, call 4 (NOTES v293), from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash <this file>
# read_probe.py --boundary on qkv and on its codes split along K across 2 or 4 blocks a tile, twice.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
source paper_figures/device_env.sh
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
C=$OUT/c4; mkdir -p $C
for run in a b; do
  PYTHONPATH=. timeout 150 python3 paper_figures/read_probe.py --boundary --shapes qkv,qkv_c2_s8,qkv_c2_s11,qkv_c4_s4 \
    > $C/boundary-$run.md 2> $C/boundary-$run.err
  echo "read_probe exit $?" >> $C/boundary-$run.err
done
cat $C/boundary-a.md $C/boundary-b.md $C/boundary-a.err $C/boundary-b.err
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
