#!/usr/bin/env bash
# Call 4 of the nineteenth session (nvidia-h200; NOTES v117): whether the carried norms (c3: +750
# us at 8B) lost to block placement under PDL: a consumer's blocks, launched at the producer's
# trigger (after its loop), land only where the producer's blocks leave room (c3: the 8B gate_up
# 8 blocks on 103 SMs, 2 on 25; qkv 2 on 94 SMs, none on 34). late: every bf16 GEMM kernel's
# launch_dependents removed (gemm_tile.cuh), so its dependents launch as it exits. Timing only
# (bits do not depend on the trigger). Forward rows (8B, 1B) base / newlate / baselate / newlate /
# base, then the timeline of newlate with one layer's blocks.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session19
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base baselate newlate; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
for v in base baselate; do (cd /tmp/$v && patch -s -R -p1 < $HERE/carried.patch); done
for v in baselate newlate; do sed -i '/^  pdl_trigger();$/d' /tmp/$v/cuda/gemm_tile.cuh; done
for v in base baselate newlate; do echo "$v: triggers in gemm_tile.cuh $(grep -c 'pdl_trigger();' /tmp/$v/cuda/gemm_tile.cuh), norm_epilogue.py $(ls /tmp/$v/swiftspec_core/kernels/norm_epilogue.py 2>/dev/null | wc -l)"; done
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward newlate a; forward baselate a; forward newlate b; forward base b
(cd /tmp/newlate && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models llama-3-8b,llama-3.2-1b \
    --csv $O/timeline-newlate.csv --blocks $O/blocks-newlate.csv > $O/timeline-newlate.md 2> $O/timeline-newlate.log)
echo "timeline newlate exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (norm|qkv|attention|o|gate_up|down) " $O/timeline-newlate.md
cd $OUT && tar czf all.tgz c4
