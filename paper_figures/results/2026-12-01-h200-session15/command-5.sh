#!/usr/bin/env bash
# Fifteenth session, call 5 (nvidia-h200; NOTES v90): the AWQ GEMM's access pattern streamed with no
# arithmetic, by load mechanism and depth (paper_figures/read_probe.py), with the SM clock and power
# sampled every 200 ms meanwhile.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv; } > $O/env.log 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu --format=csv -lms 200 > $O/clocks.csv 2>&1 &
SMI=$!
PYTHONPATH=. timeout -k 5 240 python3 paper_figures/read_probe.py > $O/read-probe.md 2> $O/read-probe.log
echo "read probe exit $? ($(( $(date +%s) - START )) s)"
kill $SMI 2>/dev/null
cat $O/read-probe.md; tail -3 $O/read-probe.log
echo "SM clock MHz while busy (utilization > 50%): $(awk -F', ' 'NR > 1 && $5 + 0 > 50 {print $2}' $O/clocks.csv | sort -n | uniq -c | sort -rn | head -5 | tr '\n' ' ')"
cd $OUT && tar czf all.tgz c5
