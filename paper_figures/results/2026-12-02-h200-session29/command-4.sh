#!/usr/bin/env bash
# Session 29, call 4: is the persistent draft's longer host stretch (call 3: 332 against 267 us a
# step between the top-k read back and the next block's copy; every host call ~1.4x longer) the
# kernel set's or the run's order (persistent ran first in calls 2, 3 and 28's c8)? The qa decode
# profiled fused first, then persistent; then qa / gsm8k x 4 end to end in the order F P F P (two
# output folders, so no row is skipped as done). One H200, carry [".data"].
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/ng; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nproc >> $O/env.log; cat /proc/loadavg >> $O/env.log
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
for k in fused persistent; do  # one qa decode under the profiler
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_decode.py $O/decode-$k.md -- run \
      --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16 --systems tree \
      --kernels $k --acceptance replay:$R \
      --datasets qa --limit 1 --max-new-tokens 256 --data-dir .data/eagle --out $O/decode-$k > $O/decode-$k.log 2>&1
  echo "decode $k exit $? ($(( $(date +%s) - START )) s)"; grep "decode wall" $O/decode-$k.md
  sed -n "/^| idle after/,/^$/p" $O/decode-$k.md | sed -n 3,4p; sed -n "/^| host call/,$ p" $O/decode-$k.md | sed -n 3,8p
done
for half in a b; do
  REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$half 200 \
      "4 --systems tree --kernels fused --datasets qa,gsm8k" "4 --systems tree --kernels persistent --datasets qa,gsm8k" \
      > $O/e2e-$half.log 2>&1
  grep -hE "^==|skipped|error" $O/e2e-$half.log | tail -4
  python3 -m swiftspec_bench.cli compare $O/e2e-$half --format markdown > $O/e2e-$half/compare.md 2>&1
  grep -E "\| (qa|gsm8k|overall) " $O/e2e-$half/compare.md | cut -c30-240
done
cat /proc/loadavg >> $O/env.log
cd $OUT && tar czf ng.tgz ng
