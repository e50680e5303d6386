#!/usr/bin/env bash
# Session 44, call 1 (nvidia-h200, carry .base: f1a2db0's cuda/, swiftspec_*/ and probes), run
# from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session44/command-1.sh
# (NOTES v248; session 43's command-7.sh, not run then). The combine by pieces, summed in place into
# the first warp's pieces, then one thread an element as before: 1. fingerprints against session 43
# call 5's base (same kernel as f1a2db0). 2. The 70B AWQ forward new / base / new / base. 3. The AWQ
# GPU tests. 4. awq_fp16_probe.py on new if time is left.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O; H=paper_figures/results/2026-12-03-h200-session43
{ echo "commit $SWIFTSPEC_COMMIT (base: f1a2db0 in .base), $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > $O/hashes-new.json 2> $O/hashes-new.log
echo "hashes: exit $? ($(( $(date +%s) - START )) s)"
if cmp -s $H/c5/hashes-base.json $O/hashes-new.json; then echo "fingerprints: all $(grep -c '": "' $O/hashes-new.json) equal call 5's base"; else echo "fingerprints DIFFER:"; diff $H/c5/hashes-base.json $O/hashes-new.json | head; fi
[ -f .base/paper_figures/profile_forward.py ] || cp paper_figures/profile_forward.py paper_figures/forward_ablation.py .base/paper_figures/
profile() {  # profile TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2.csv > $O/profile-$2.md 2> $O/profile-$2.log)
  echo "profile $2 exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$2.md | cut -d'|' -f2,5 | tr -s ' ' | tr '\n' ';'; echo
}
profile . new-a; profile .base base-a; profile . new-b; profile .base base-b
timeout -k 5 90 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
if [ $(( $(date +%s) - START )) -lt 220 ]; then
  PYTHONPATH=. timeout -k 5 50 python3 paper_figures/awq_fp16_probe.py --out $O/probe-new --ops o,qkv,down > $O/probe-new.log 2>&1
  echo "probe new: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (o|qkv|down) \| (8|16) " $O/probe-new.log | cut -d'|' -f2-7
fi
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
