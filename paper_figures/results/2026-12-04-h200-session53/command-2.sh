#!/usr/bin/env bash
# Session 53, call 2 (NOTES v291, repeated): call 1's read_probe.py and test_read_probe.py failed on
# the probe's launch (a CuPy RawKernel's address is fn.kernel.ptr); from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash <this file>
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
source paper_figures/device_env.sh
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
C=$OUT/c2; mkdir -p $C
bash paper_figures/gpu_test_files.sh $C/tests 60 tests/test_read_probe.py
PYTHONPATH=. timeout 240 python3 paper_figures/read_probe.py > $C/read-probe.md 2> $C/read-probe.err
echo "read_probe exit $?" >> $C/read-probe.err
cat $C/read-probe.md; tail -3 $C/read-probe.err
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
