#!/usr/bin/env bash
# Prepared in session 48 for the next one-H200 call (NOTES v270), run from the repo root of main as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session48/next-h200-prologue.sh
# No carry: the script copies main's tree to /tmp/base, then applies prologue-copies.patch to the
# device's copy (the r8 AWQ kernels' first copies before their lane constants and accumulators).
# 1. awq_output_hash.py in both trees (the arithmetic is unchanged: every fingerprint equal). 2. The
# 70B AWQ forward new / base, three pairs. 3. The AWQ GPU tests on new. 4. awq_fp16_probe.py (o, qkv,
# down at M = 1, 8, 16) in both trees, time allowing. Writes $OUT/p1 (tarred).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-04-h200-session48
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/p1; mkdir -p $O
B=/tmp/base; rm -rf $B; mkdir -p $B/paper_figures
cp -r cuda swiftspec_core swiftspec_bench pyproject.toml $B/ && cp paper_figures/*.py $B/paper_figures/
patch -p1 < $HERE/prologue-copies.patch > $O/patch.log 2>&1 || { echo "error: the patch does not apply"; cat $O/patch.log; exit 2; }
{ echo "commit $SWIFTSPEC_COMMIT + prologue-copies.patch (base: the commit as is, in $B), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > $O/hashes-new.json 2> $O/hashes-new.log
(cd $B && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > $O/hashes-base.json 2> $O/hashes-base.log)
echo "hashes: exit $? ($(( $(date +%s) - START )) s)"
if cmp -s $O/hashes-base.json $O/hashes-new.json; then echo "fingerprints: all $(grep -c '": "' $O/hashes-new.json) equal"
else echo "fingerprints DIFFER:"; diff $O/hashes-base.json $O/hashes-new.json | head; fi
profile() {  # profile TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2.csv > $O/profile-$2.md 2> $O/profile-$2.log)
  echo "profile $2 exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$2.md | cut -d'|' -f2,5 | tr -s ' ' | tr '\n' ';'; echo
}
profile . new-a; profile $B base-a; profile . new-b; profile $B base-b
if [ $(( $(date +%s) - START )) -lt 330 ]; then profile . new-c; profile $B base-c; fi
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
for t in new base; do
  [ $(( $(date +%s) - START )) -lt 470 ] || break
  tree=.; [ $t = base ] && tree=$B
  (cd $tree && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/awq_fp16_probe.py --out $O/probe-$t --ops o,qkv,down > $O/probe-$t.log 2>&1)
  echo "probe $t: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (o|qkv|down) \| (1|8|16) " $O/probe-$t.log | cut -d'|' -f2-7
done
cd $OUT && tar czf p1.tgz p1 && rm -rf p1
