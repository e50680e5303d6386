#!/usr/bin/env bash
# Sixteenth session, call 6 (nvidia-h200; the last ~4 device minutes): call 5's machine ran the
# landed commit's 8B forward 45 us slower than call 4's: base (to-base-c6.patch, and the GEMMs'
# triggers at their start again: late-landed.patch reversed) against this commit on one machine.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session16
O=$OUT/c6; mkdir -p $O; echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for v in base new; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench cuda /tmp/$v/; done
(cd /tmp/base && patch -s -p1 < $HERE/to-base-c6.patch && patch -s -R -p1 < $HERE/late-landed.patch)
grep -c "pdl_trigger();" /tmp/{base,new}/cuda/gemm_tile.cuh
forward() {
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 50 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward new a; forward base b; forward new b
cd $OUT && tar czf all.tgz c6
