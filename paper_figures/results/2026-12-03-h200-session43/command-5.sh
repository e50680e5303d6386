#!/usr/bin/env bash
# Session 43, call 5 (nvidia-h200, carry .base: 5e955ac's cuda/, swiftspec_*/ and probes), run from
# the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session43/command-5.sh
# (NOTES v245). The AWQ combine by float4 pieces: 1. the outputs' fingerprints in both trees. 2.
# awq_fp16_probe.py base / new alternately twice. 3. awq_phases.py on new. 4. The AWQ GPU tests on new.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT (base: 5e955ac in .base), $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
for t in base new; do
  d=.; [ $t = base ] && d=.base
  (cd $d && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/awq_output_hash.py > $O/hashes-$t.json 2> $O/hashes-$t.log)
  echo "hashes $t: exit $? ($(( $(date +%s) - START )) s)"
done
if cmp -s $O/hashes-base.json $O/hashes-new.json; then echo "fingerprints: all $(grep -c '": "' $O/hashes-new.json) equal"; else echo "fingerprints DIFFER:"; diff $O/hashes-base.json $O/hashes-new.json | head; fi
probe() {  # probe TREE(. or .base) NAME
  (cd $1 && PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_fp16_probe.py --out $O/probe-$2 \
      --ops o,qkv,down,gate_up_swiglu > $O/probe-$2.log 2>&1)
  echo "probe $2: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (o|qkv|down|gate_up_swiglu) \| (8|16) " $O/probe-$2.log | cut -d'|' -f2-7
}
probe .base base-a; probe . new-a; probe .base base-b; probe . new-b
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_phases.py --out $O/phases-new > $O/phases-new.log 2>&1
echo "phases new: exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\|" $O/phases-new.log
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > $O/awq-tests.log 2>&1
echo "awq tests: exit $? $(tail -1 $O/awq-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/awq-tests.log | head -8
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
