#!/usr/bin/env bash
# Call 4 of the twentieth session (nvidia-h200): two attention mergers where one merger's items
# outnumber its threads (rounds.patch = branch merge-rounds; NOTES v124): the 8B at M = 9..15 (the
# verification's default width 12) gets two, the 1B at M = 16 one. Its GPU tests (the attention's,
# 1 and 2 mergers bitwise), attention rows (8B, 1B; M = 8, 9, 12, 16; context 1000) and forward
# rows (8B at M = 8 and 12, the 1B's draft step) base / new / new / base. ~4 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session20
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT + rounds.patch, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base new; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/new && patch -s -p1 < $HERE/rounds.patch) && echo "new: $(grep -c 'hd // 8' /tmp/new/swiftspec_core/kernels/attention.py) rule line"
(cd /tmp/new && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    > $O/gpu-tests-new.log 2>&1)
echo "new tests: exit $? $(tail -1 $O/gpu-tests-new.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-new.log | head -5
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8,9,12,16 --context 1000 --ops attention --impl ours --out $O/attn-$1-$2 > $O/attn-$1-$2.log 2>&1
   PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8,12 --context 1000 \
      --ops forward --impl ours --out $O/fwd-$1-$2 > $O/fwd-$1-$2.log 2>&1
   PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 --context 1000 \
      --ops draft_step --impl ours --out $O/step-$1-$2 > $O/step-$1-$2.log 2>&1)
  echo "$1 ($2) ($(( $(date +%s) - START )) s): $(cat $O/attn-$1-$2/kernels.md $O/fwd-$1-$2/kernels.md $O/step-$1-$2/kernels.md \
      | grep -E "^\| (attention|forward|draft_step) " | cut -d'|' -f2,3,5,7 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run new a; run new b; run base b
cd $OUT && tar czf all.tgz c4
