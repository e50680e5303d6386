#!/usr/bin/env bash
# Call 2 of the twenty-fourth session (nvidia-h200; NOTES v143): does a change of an SM's shared-memory
# configuration cost at a kernel boundary? 1) edge_probe.py --configs: o-like producer -> gate_up-like
# consumer under preferred carveouts (KB configurations 32 -> 132, 132 -> 132, 32 -> 32, ...).
# 2) ncu: the configuration of each kernel of a 1B layer with o launched at 57% (launch-carveout.patch).
# 3) 1B rows (forward, draft step) and timelines, ABAB: base, oC (the 1B's o launched with a preferred
# carveout of 57%, 130 KB rounded up to 132, the attention's and gate_up's configuration), oCd (oC and down at 28%,
# 64 KB: qkv's).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session24
O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (+ launch-carveout.patch for oC, oCd), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/edge_probe.py --configs > $O/probe.md 2> $O/probe.log
echo "probe exit $? ($(( $(date +%s) - START )) s)"; cat $O/probe.md
rm -rf /tmp/t; mkdir -p /tmp/t; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/t/
(cd /tmp/t && patch -s -p1 < $HERE/launch-carveout.patch) && echo patched
OC='gemm_nt2/k2048=57'; OCD='gemm_nt2/k2048=57;gemm_nt2/k8192=28'
METRICS=launch__shared_mem_config_size,launch__grid_size
(cd /tmp/t && SWIFTSPEC_TRY_CARVEOUT="$OCD" PYTHONPATH=. timeout -k 5 90 ncu --clock-control none \
    --kernel-name regex:"^(gemm|tree_attention)" --launch-count 6 --metrics $METRICS python3 -m swiftspec_bench.cli \
    kernels --models llama-3.2-1b --tp 1 --m 8 --context 1000 --ops forward --impl ours --out /tmp/ncu > $O/ncu-oCd.log 2>&1)
echo "ncu exit $? ($(( $(date +%s) - START )) s)"
grep -E "^  [a-z_0-9]+ \(|config_size" $O/ncu-oCd.log | awk '{print $1, $NF}' | paste - - | tr '\n' ';'; echo
run() {  # run LABEL TRY
  (cd /tmp/t && SWIFTSPEC_TRY_CARVEOUT="$2" PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels \
      --models llama-3.2-1b --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours \
      --out $O/kernels-$1 > $O/kernels-$1.log 2>&1)
  echo "$1 exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1/kernels.md | cut -d'|' -f2,7,9 | tr -d ' ' | tr '\n' ' ')"
  (cd /tmp/t && SWIFTSPEC_TRY_CARVEOUT="$2" PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py \
      --models llama-3.2-1b --width 9 > $O/timeline-$1.md 2> $O/timeline-$1.log)
  echo "  $(grep -o 'last end [0-9.]* us' $O/timeline-$1.md); adds: $(grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-$1.md | cut -d'|' -f2,7 | tr -d ' ' | tr '\n' ' ')"
  echo "  in wait: $(grep -A6 "^| place | reach" $O/timeline-$1.md | grep -E "^\| (qkv|o|gate_up|down) \|" | cut -d'|' -f2,4 | tr -d ' ' | tr '\n' ' ')"
}
run base-a ''; run oC-a "$OC"; run oCd-a "$OCD"; run base-b ''; run oC-b "$OC"; run oCd-b "$OCD"
cd $OUT && tar czf c2.tgz c2
