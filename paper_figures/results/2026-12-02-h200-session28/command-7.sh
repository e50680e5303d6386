#!/usr/bin/env bash
# Session 28, call 7 (NOTES "Twenty-eighth session, call 7"), one H200, main at the commit given.
# Call 6's end to end had the persistent draft slower a round on qa and gsm8k (short prompts) in
# both runs: the draft step at the run's width 15 (--tree-w 14) at a short and a long context,
# ours and persistent (call 6: context 1000, 1064.7 against 980.4 us).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c7; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
for ctx in 300 3000; do
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 --context $ctx \
      --ops draft_step --impl ours,persistent --tree-w 14 --out $O/kernels-$ctx > $O/kernels-$ctx.log 2>&1
  echo "kernels $ctx exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (draft_step) " $O/kernels-$ctx/kernels.md
done
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/profile_forward.py --models llama-3.2-1b --width 15 --context 300 \
    --impl persistent > $O/profile-persistent-300.md 2>&1
echo "profile exit $? ($(( $(date +%s) - START )) s)"; grep -E "^(llama|\| )" $O/profile-persistent-300.md | cut -c1-130
cd $OUT && tar czf c7.tgz c7
