#!/usr/bin/env bash
# Call 4 of the twenty-fourth session (nvidia-h200; NOTES v145): edge_pairs.py on main and with
# every GEMM's first weight loads after its PDL wait (session23/nowait-prefetch.patch), base first.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
START=$(date +%s); O=$OUT/c4; mkdir -p $O
for v in base nowait; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda datasets.yaml /tmp/$v/; done
(cd /tmp/nowait && patch -s -p1 < $OLDPWD/paper_figures/results/2026-12-01-h200-session23/nowait-prefetch.patch) && echo patched
for v in base nowait base; do
  (cd /tmp/$v && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/edge_pairs.py > $O/pairs-$v.md 2>> $O/pairs-$v.log)
  echo "$v exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (o|probe|gate_up|down)" $O/pairs-$v.md
done
cd $OUT && tar czf c4.tgz c4
