#!/usr/bin/env bash
# Session 45, call 2 (nvidia-h200, carry .base: f958754's cuda/, swiftspec_*/ and probes), run from
# the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-04-h200-session45/command-2.sh
# (NOTES v253). The stream-K AWQ GEMM: 1. its GPU tests and the AWQ tests it touches. 2. The 70B
# AWQ forward new / base three times each. 3. awq_streamk_probe.py: plan() against stream-K on every
# Llama AWQ projection it takes, M = 8 (the 70B's first, before the tests). 4. Fingerprints against session 44's base (o, down and the
# norm epilogues of o / down unchanged; qkv, gate_up are stream-K's now).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O; H=paper_figures/results/2026-12-03-h200-session44
{ echo "commit $SWIFTSPEC_COMMIT (base: f958754 in .base), $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
PYTHONPATH=. timeout -k 5 60 python3 paper_figures/awq_streamk_probe.py --models llama-3-70b --out $O/probe70 > $O/probe70.md 2> $O/probe70.log
echo "probe 70b: exit $? ($(( $(date +%s) - START )) s)"; grep -E "70b" $O/probe70.md | cut -d'|' -f2,6,9-13
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_streamk.py > $O/streamk-tests.log 2>&1
echo "stream-K tests: exit $? $(tail -1 $O/streamk-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/streamk-tests.log | head -8
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py -k "swiglu or model_layer" \
    tests/test_awq_norms.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
profile() {  # profile TREE NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$2.csv > $O/profile-$2.md 2> $O/profile-$2.log)
  echo "profile $2 exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$2.md | cut -d'|' -f2,5 | tr -s ' ' | tr '\n' ';'; echo
}
for run in a b c; do profile . new-$run; profile .base base-$run; done
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/awq_streamk_probe.py --models llama-3-8b,llama-3.2-3b,llama-3.2-1b --out $O/probe > $O/probe.md 2> $O/probe.log
echo "probe: exit $? ($(( $(date +%s) - START )) s)"; grep -E "tp" $O/probe.md | cut -d'|' -f2,6,9-13
PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > $O/hashes-new.json 2> $O/hashes-new.log
echo "hashes: exit $? ($(( $(date +%s) - START )) s)"
diff $H/c4/hashes-base.json $O/hashes-new.json | grep "^[<>]" | cut -c1-40 | sort | uniq -c | sort -rn | head -4
diff $H/c4/hashes-base.json $O/hashes-new.json | grep "^>" | cut -d'"' -f2 | cut -d' ' -f1 | sort | uniq -c
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
