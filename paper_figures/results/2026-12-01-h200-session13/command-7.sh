#!/usr/bin/env bash
# Thirteenth session, call 7 (nvidia-h200): plan()'s tile threshold lowered to ~0.45 blocks an SM
# (f45: a sed of `sms * 9` to `sms * 4.5`: the 1B / 3B qkv, o and down take NT = 4; NOTES v72), in
# the forward: forward / draft_step rows (3B, 1B, M = 8), base, f45, base again.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s)
O=$OUT/c7; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
cp swiftspec_core/kernels/gemm.py /tmp/gemm.py
variant() {  # $1: label; the tree is set up for it
  timeout -k 5 100 python3 -m swiftspec_bench.cli kernels --models llama-3.2-3b,llama-3.2-1b --tp 1 \
      --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1 > $O/kernels-$1.log 2>&1
  echo "$1 exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (forward|draft_step)" $O/kernels-$1/kernels.md | cut -c1-90
}
variant base
sed -i 's/\* 10 >= sms \* 9), 1)/* 10 >= sms * 4.5), 1)/' swiftspec_core/kernels/gemm.py && grep -c "sms \* 4.5" swiftspec_core/kernels/gemm.py
variant f45
cp /tmp/gemm.py swiftspec_core/kernels/gemm.py
variant base2
cd $OUT && tar czf all.tgz c7
