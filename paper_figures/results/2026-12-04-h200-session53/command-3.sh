#!/usr/bin/env bash
# Session 53, call 3 (NOTES v292), from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash <this file>
# read_probe.py --boundary (the GEMM's launch of each 70B shape at the probe's occupancy and at
# awq_gemm's, held 0 / 1000 / 2000 cycles after its loop), twice; test_read_probe.py's GPU tests.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
source paper_figures/device_env.sh
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
C=$OUT/c3; mkdir -p $C
bash paper_figures/gpu_test_files.sh $C/tests 90 tests/test_read_probe.py
for run in a b; do
  PYTHONPATH=. timeout 150 python3 paper_figures/read_probe.py --boundary > $C/boundary-$run.md 2> $C/boundary-$run.err
  echo "read_probe exit $?" >> $C/boundary-$run.err
done
cat $C/boundary-a.md $C/boundary-b.md; tail -2 $C/boundary-*.err
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
