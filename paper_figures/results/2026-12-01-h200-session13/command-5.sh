#!/usr/bin/env bash
# Thirteenth session, call 5 (nvidia-h200): plan()'s tile threshold in the forward (NOTES v70): the
# widest NT giving ~0.9 blocks an SM (base), ~1.8 (f18) or ~3.6 (f36): a sed of plan()'s `sms * 9`.
# Forward / draft_step rows (8B, 1B, M = 8) a variant, base first and last.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c5; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
cp swiftspec_core/kernels/gemm.py /tmp/gemm.py
variant() {  # $1: label; the tree is set up for it
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 \
      --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1 > $O/kernels-$1.log 2>&1
  echo "$1 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (forward|draft_step)" $O/kernels-$1/kernels.md | cut -c1-90
}
variant base
sed -i 's/\* 10 >= sms \* 9), 1)/* 10 >= sms * 18), 1)/' swiftspec_core/kernels/gemm.py && grep -c "sms \* 18" swiftspec_core/kernels/gemm.py
variant f18
cp /tmp/gemm.py swiftspec_core/kernels/gemm.py
sed -i 's/\* 10 >= sms \* 9), 1)/* 10 >= sms * 36), 1)/' swiftspec_core/kernels/gemm.py && grep -c "sms \* 36" swiftspec_core/kernels/gemm.py
variant f36
cp /tmp/gemm.py swiftspec_core/kernels/gemm.py
variant base2
cd $OUT && tar czf all.tgz c5
