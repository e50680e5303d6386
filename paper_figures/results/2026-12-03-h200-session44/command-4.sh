#!/usr/bin/env bash
# Session 44, call 4 (nvidia-h200, carry .base: 788cb35's cuda/, swiftspec_*/ and probes, with this
# commit's awq_output_hash.py), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session44/command-4.sh
# (NOTES v251). The norm epilogue's squares padded to 65 floats a row: 1. fingerprints (plain and
# norm epilogues) in both trees, compared. 2. The AWQ GPU tests. 3. The 70B AWQ forward new / base
# four times each.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (base: 788cb35 in .base), $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for t in new base; do
  d=.; [ $t = base ] && d=.base
  (cd $d && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/awq_output_hash.py > $O/hashes-$t.json 2> $O/hashes-$t.log)
  echo "hashes $t: exit $? ($(( $(date +%s) - START )) s), $(grep -c '": "' $O/hashes-$t.json) lines"; tail -2 $O/hashes-$t.log
done
if cmp -s $O/hashes-base.json $O/hashes-new.json; then echo "fingerprints: all equal"; else echo "fingerprints DIFFER:"; diff $O/hashes-base.json $O/hashes-new.json | head; fi
timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
profile() {  # profile TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2.csv > $O/profile-$2.md 2> $O/profile-$2.log)
  echo "profile $2 exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2.md)"
}
for run in a b c d; do profile . new-$run; profile .base base-$run; done
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
