#!/usr/bin/env bash
# Session 34, call 3, ran at e9592f7 as `SWIFTSPEC_COMMIT=e9592f7 bash command-3.sh` (NOTES v213), nvidia-h200, no carry: the 70B AWQ forward (profile_forward.py,
# M = 8, context 1000) on three trees: new (this commit: fp16 x for qkv, gate_up and down), mixed
# (mixed.patch: gate_up's x back in bf16) and base (the operand dtype set back to bf16 in
# forward.py); PDL on: new, mixed, base, mixed, new; PDL off (each kernel's own time): new, base.
# Before them the AWQ GPU tests and awq_fp16_probe.py on this commit's fold (NOTES v213).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-02-h200-session34; O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
PYTHONPATH=. timeout -k 5 120 python3 paper_figures/awq_fp16_probe.py --out $O --ops o,qkv,down,gate_up_swiglu > $O/probe.log 2>&1
echo "probe: exit $? ($(( $(date +%s) - START )) s)"; grep -v "^{" $O/probe.log | tail -14
for v in new mixed base; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/$v/; done
(cd /tmp/mixed && patch -s -p1 < $HERE/mixed.patch) && echo "mixed: patched"
sed -i 's/    operand = torch.float16 if h.dtype == torch.bfloat16 else h.dtype /    operand = h.dtype /' /tmp/base/swiftspec_core/kernels/forward.py
echo "base: $(grep -c '    operand = h.dtype ' /tmp/base/swiftspec_core/kernels/forward.py) line changed"
profile() {  # profile TREE RUN PDL
  (cd /tmp/$1 && SWIFTSPEC_PDL=$3 PYTHONPATH=. timeout -k 5 80 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2, PDL $3) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|attention|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2,4,5,6 | tr -s ' ' | tr '\n' ';'; echo
}
profile new a 1; profile mixed a 1; profile base a 1; profile mixed b 1; profile new b 1
profile new own 0; profile base own 0
cd $OUT && tar czf c3.tgz c3
