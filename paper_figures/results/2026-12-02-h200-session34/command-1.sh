#!/usr/bin/env bash
# Session 34, call 1, ran at 7682442 as `SWIFTSPEC_COMMIT=7682442 bash command-1.sh` (its probe then built the fp16 kernels from a macro, AWQ_FP16_OPERANDS, since replaced by the template) (NOTES v211), nvidia-h200, no carry: awq_gemm with fp16 mma operands against
# its bf16 kernel on the 70B's four GEMMs (branch awq-fp16; the device runs the working tree).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv; } > $O/env.log
PYTHONPATH=. timeout -k 5 420 python3 paper_figures/awq_fp16_probe.py --out $O --ops ${OPS:-o,qkv,down,gate_up} > $O/probe.log 2>&1
echo "probe: exit $?"; grep -v "^{" $O/probe.log | tail -20
tar czf $OUT/c1.tgz -C $OUT c1
