#!/usr/bin/env bash
# Session 30, call 6: graph-copy against main in one process (graph_copy_ab.py), the draft step's
# forward call and whole step; then graph-copy's graphs test (the decoders exact through graphs).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O; P=$PWD/paper_figures/results
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/gc && mkdir -p /tmp/gc && cp -r . /tmp/gc/ && (cd /tmp/gc && patch -s -p1 < $P/2026-12-02-h200-session29/graph-copy.patch) && echo "graph-copy patched"
GC_GRAPHS=/tmp/gc/swiftspec_core/graphs.py PYTHONPATH=. timeout -k 5 150 python3 $P/2026-12-02-h200-session30/graph_copy_ab.py $O/graph-copy-ab.md > $O/graph-copy-ab.log 2>&1
echo "graph_copy_ab exit $? ($(( $(date +%s) - START )) s)"; cat $O/graph-copy-ab.md; tail -2 $O/graph-copy-ab.log
cd $OUT && tar czf c6.tgz c6
