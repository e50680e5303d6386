#!/usr/bin/env bash
# Session 53, call 5 (NOTES v294), from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash <this file>
# qkv's launch shape inside the 70B AWQ forward: plan()'s 11x1 against the clusters 8x2 and 4x4
# launched with PDL (p) and 8x2 as the runtime launches clusters (without), 3 rounds.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
source paper_figures/device_env.sh
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
C=$OUT/c5; mkdir -p $C
PYTHONPATH=. timeout 400 python3 paper_figures/plan_in_forward.py --op qkv --shapes 11x1,8x2p,4x4p,8x2 --rounds 3 \
  > $C/qkv.md 2> $C/qkv.err
echo "plan_in_forward exit $?" >> $C/qkv.err
cat $C/qkv.md; tail -n 3 $C/qkv.err
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
