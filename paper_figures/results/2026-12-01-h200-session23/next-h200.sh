#!/usr/bin/env bash
# The next session's first call on one H200 (written in the twenty-third; NOTES v142): what delays a
# GEMM's release after o. 1) ncu: the shared-memory configuration the driver picks for each kernel
# of one 1B and one 8B layer (eager warm-up launches). 2) In patched copies, rows (1B and 8B
# forward and draft step; base first and last) and 1B timelines at width 9: oop (o-out-of-place.patch:
# the 1B's o writes a new buffer, not h in place; same bits), carveG / carveA (try-carveout.patch:
# gate_up's / every bf16 GEMM's preferred carveout set to the attention's configuration as ncu
# reports it). ~5 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session23
O=$OUT/n1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (+ patches by variant), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; ncu --version | tail -1; } > $O/env.log 2>&1
METRICS=launch__shared_mem_config_size,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static
METRICS=$METRICS,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__grid_size,launch__block_size
for m in llama-3.2-1b llama-3-8b; do
  PYTHONPATH=. timeout -k 5 120 ncu --clock-control none --kernel-name regex:"^(gemm|tree_attention|add_rmsnorm|rmsnorm)" \
      --launch-count 7 --metrics $METRICS python3 -m swiftspec_bench.cli kernels --models $m --tp 1 --m 8 \
      --context 1000 --ops forward --impl ours --out /tmp/ncu-$m > $O/ncu-$m.log 2>&1
  echo "ncu $m: exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^  [a-z_0-9]+\(|config_size|per_block_dynamic|limit_shared" $O/ncu-$m.log | awk '{print $1, $(NF-1), $NF}'
done
# The attention's configuration (KB) -> a percent of the 228 KB an SM may give shared memory.
KB=$(grep -A40 "tree_attention" $O/ncu-llama-3.2-1b.log | grep -m1 "config_size" | awk '{print $NF}' | cut -d. -f1)
UNIT=$(grep -A40 "tree_attention" $O/ncu-llama-3.2-1b.log | grep -m1 "config_size" | awk '{print $(NF-1)}')
case "$UNIT" in Kbyte|KB|kbyte) ;; byte) KB=$((KB / 1024));; *) echo "config unit $UNIT: taking 132 KB"; KB=132;; esac
PCT=$(( (KB * 100 + 227) / 228 )); echo "attention's configuration $KB KB -> carveout $PCT%"
for v in base oop carve; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests datasets.yaml /tmp/$v/
done
(cd /tmp/oop && patch -s -p1 < $HERE/o-out-of-place.patch) && (cd /tmp/carve && patch -s -p1 < $HERE/try-carveout.patch) && echo patched
run() {  # run TREE LABEL CARVEOUT
  (cd /tmp/$1 && SWIFTSPEC_TRY_CARVEOUT=$3 PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels \
      --models llama-3.2-1b,llama-3-8b --tp 1 --m 8 --context 1000 --ops forward,draft_step --impl ours \
      --out $O/kernels-$2 > $O/kernels-$2.log 2>&1)
  echo "$2 exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step) " $O/kernels-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
  (cd /tmp/$1 && SWIFTSPEC_TRY_CARVEOUT=$3 PYTHONPATH=. timeout -k 5 60 python3 paper_figures/forward_timeline.py \
      --models llama-3.2-1b --width 9 > $O/timeline-$2.md 2> $O/timeline-$2.log)
  grep -E "^\| (qkv|attention|o|gate_up|down) \|" $O/timeline-$2.md | cut -d'|' -f2,7,9,14 | tr '\n' ' '; echo
  grep -A6 "^| place | reach" $O/timeline-$2.md | grep -E "^\| (o|gate_up|down) \|" | tr '\n' ' '; echo
}
run base base-a none=0; run oop oop none=0; run carve carveG "gemm_swiglu.*=$PCT"; run carve carveA "gemm_.*=$PCT"
run base base-b none=0
cd $OUT && tar czf n1.tgz n1
