#!/usr/bin/env bash
# Session 44, call 2 (nvidia-h200, carry .base: 15c0c59's cuda/, swiftspec_*/ and probes), run
# from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session44/command-2.sh
# (NOTES v249). The AWQ epilogue's global lines prefetched into L1 at each warp's last group (M <= 8):
# 1. fingerprints (plain GEMMs: must equal session 43 call 5's base). 2. The AWQ GPU tests (the
# residual and norm epilogues against torch). 3. The 70B AWQ forward new / base three times each.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O; H=paper_figures/results/2026-12-03-h200-session43
{ echo "commit $SWIFTSPEC_COMMIT (base: 15c0c59 in .base), $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > $O/hashes-new.json 2> $O/hashes-new.log
echo "hashes: exit $? ($(( $(date +%s) - START )) s)"
if cmp -s $H/c5/hashes-base.json $O/hashes-new.json; then echo "fingerprints: all $(grep -c '": "' $O/hashes-new.json) equal call 5's base"; else echo "fingerprints DIFFER:"; diff $H/c5/hashes-base.json $O/hashes-new.json | head; fi
timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
profile() {  # profile TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2.csv > $O/profile-$2.md 2> $O/profile-$2.log)
  echo "profile $2 exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2.md)"
}
for run in a b c; do profile . new-$run; profile .base base-$run; done
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
