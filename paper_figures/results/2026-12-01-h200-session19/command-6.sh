#!/usr/bin/env bash
# Call 6 of the nineteenth session (nvidia-h200; NOTES v119): the 8B's norm kernels in blocks of 256
# threads (MAX_THREADS 1024 -> 256 in kernels/norm.py: add_rmsnorm_c2, 256 threads a row) instead of
# 512, so that the gate_up and qkv blocks dispatched under PDL while a norm block runs can share
# its SM (c2: both spread over 124 SMs, none on the norm's 8). Timing only (c2 reduces a row in
# another order: other bits, still row-invariant). Forward rows (8B, 1B) base / small / small /
# base, then the timeline of small with one layer's blocks.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base small; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
sed -i 's/^MAX_THREADS = 1024$/MAX_THREADS = 256/' /tmp/small/swiftspec_core/kernels/norm.py
echo "small: $(grep '^MAX_THREADS' /tmp/small/swiftspec_core/kernels/norm.py)"
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run small a; run small b; run base b
(cd /tmp/small && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py --models llama-3-8b \
    --csv $O/timeline-small.csv --blocks $O/blocks-small.csv > $O/timeline-small.md 2> $O/timeline-small.log)
echo "timeline small exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (norm|qkv|attention|o|gate_up|down) " $O/timeline-small.md
cd $OUT && tar czf all.tgz c6
