#!/usr/bin/env bash
# For the next session with one H200 (written in the eighteenth; not run; NOTES v114): the
# attention's merge shared by the last two blocks of a (kv head, query group) where a block holds
# >= 32 query rows (mergers.patch = branch two-mergers): its GPU tests, the attention rows (70B M =
# 8, 8B M = 8 and 16, 1B M = 8: the rule moves the 70B M = 8 and the 8B M = 16 only), and the 70B AWQ
# forward base / mergers / mergers / base; then forward_timeline.py on the base tree. ~6 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session18
O=$OUT/mergers; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
for v in base mergers; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/mergers && patch -s -p1 < $HERE/mergers.patch) && grep -c "merge_parts" /tmp/mergers/swiftspec_core/kernels/attention.py
(cd /tmp/mergers && timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests-mergers.log 2>&1)
echo "mergers tests: exit $? $(tail -1 $O/gpu-tests-mergers.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests-mergers.log | head -5
attention() {  # attention TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-70b,llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8,16 --context 1000 --ops attention --impl ours --out $O/attention-$1-$2 > $O/attention-$1-$2.log 2>&1)
  echo "attention $1 ($2) exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| attention .* 1000 " $O/attention-$1-$2/kernels.md | cut -d'|' -f3,5,7 | tr -d ' ' | tr '\n' ' '; echo
}
attention base a; attention mergers a; attention base b
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
}
profile base a; profile mergers a; profile mergers b; profile base b
# Then the first run of paper_figures/forward_timeline.py (NOTES v115; base tree): each kernel's
# adds, lead and tail in one replay of the 8B and 1B forwards and the 70B AWQ one.
for mq in "llama-3-8b,llama-3.2-1b none" "llama-3-70b awq"; do
  set -- $mq
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models $1 --quant $2 \
      --csv $O/timeline-$2.csv > $O/timeline-$2.md 2> $O/timeline-$2.log
  echo "timeline $1 exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (qkv|attention|o|gate_up|down) " $O/timeline-$2.md
done
cd $OUT && tar czf all.tgz mergers
