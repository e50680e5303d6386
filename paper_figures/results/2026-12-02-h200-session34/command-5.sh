#!/usr/bin/env bash
# Session 34, call 5, ran at a3e561b as `SWIFTSPEC_COMMIT=a3e561b bash command-5.sh` (NOTES v215), nvidia-h200, no carry: the landing candidate of fp16 x for the
# AWQ GEMMs. 1. AWQ GPU tests and the fused forward's. 2. awq_fp16_probe.py (the four 70B GEMMs
# and awq_swiglu, bf16 x against fp16 x). 3. The 70B AWQ forward, new / base / new / base (base:
# forward.py's operand dtype set back to bf16), PDL on.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_fused_forward.py tests/test_cuda_compile.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
PYTHONPATH=. timeout -k 5 150 python3 paper_figures/awq_fp16_probe.py --out $O --ops o,qkv,down,gate_up,gate_up_swiglu > $O/probe.log 2>&1
echo "probe: exit $? ($(( $(date +%s) - START )) s)"; grep -v "^{" $O/probe.log | tail -18
for v in new base; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda /tmp/$v/; done
sed -i 's/    operand = torch.float16 if h.dtype == torch.bfloat16 else h.dtype /    operand = h.dtype /' /tmp/base/swiftspec_core/kernels/forward.py
echo "base: $(grep -c '    operand = h.dtype ' /tmp/base/swiftspec_core/kernels/forward.py) line changed"
profile() {  # profile TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 80 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv $O/profile-$1-$2.csv > $O/profile-$1-$2.md 2> $O/profile-$1-$2.log)
  echo "profile $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -oE "replay [0-9.]+ us" $O/profile-$1-$2.md)"
  grep -E "^\| (qkv|attention|o|gate_up|down) " $O/profile-$1-$2.md | cut -d'|' -f2,4,5,6 | tr -s ' ' | tr '\n' ';'; echo
}
profile new a; profile base a; profile new b; profile base b
cd $OUT && tar czf c5.tgz c5
