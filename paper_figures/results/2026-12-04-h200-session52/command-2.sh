#!/usr/bin/env bash
# Session 52, calls 2 and 3 (NOTES v290), from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash <this file> c2                    # every GPU test file, in order, 540 s
#   SWIFTSPEC_COMMIT=<commit> bash <this file> c3 tests/test_x.py ..  # the files call 2 did not start
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
NAME=${1:?usage: command-2.sh NAME [FILE ...]}; shift
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
bash paper_figures/gpu_test_files.sh $OUT/$NAME 540 "$@"
cd $OUT && tar czf $NAME.tgz $NAME && rm -rf $NAME
