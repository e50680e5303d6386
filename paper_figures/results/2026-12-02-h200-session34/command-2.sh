#!/usr/bin/env bash
# Session 34, call 2, ran at 7cf64c5 as `SWIFTSPEC_COMMIT=7cf64c5 bash command-2.sh` (NOTES v212), nvidia-h200, no carry: fp16 x for the AWQ GEMMs (branch
# awq-fp16). 1. awq_fp16_probe.py (the four 70B GEMMs and awq_swiglu, bf16 x against fp16 x).
# 2. The 70B AWQ forward (profile_forward.py, M = 8, context 1000): this tree (fp16 operands) and
# base (the same tree, forward.py's operand dtype set back to the model's bf16), new / base / new.
# 3. The AWQ GPU tests.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
PYTHONPATH=. timeout -k 5 170 python3 paper_figures/awq_fp16_probe.py --out $O --ops o,qkv,down,gate_up,gate_up_swiglu > $O/probe.log 2>&1
echo "probe: exit $? ($(( $(date +%s) - START )) s)"; grep -v "^{" $O/probe.log | tail -18
for v in new base; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/$v/; done
sed -i 's/    operand = torch.float16 if h.dtype == torch.bfloat16 else h.dtype /    operand = h.dtype /' /tmp/base/swiftspec_core/kernels/forward.py
echo "base: $(grep -c '    operand = h.dtype ' /tmp/base/swiftspec_core/kernels/forward.py) line changed"
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 80 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|o|gate_up|down) " $O/profile-$1-$2.md | tr -s ' ' | head -4
}
profile new a; profile base a; profile new b
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
cd $OUT && tar czf c2.tgz c2
