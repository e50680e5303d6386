#!/usr/bin/env bash
# Sixteenth session, call 4 (nvidia-h200; NOTES v99): GPU tests on this commit (the attention's with
# the append inside, the fused decoders exact, every AWQ GEMM test on the landed shf3 + lds128);
# forward / draft_step rows (8B, 1B) of base (to-base.patch: the append a kernel again), new, and
# each with late.patch (the bf16 GEMMs trigger their dependents after their main loop), twice.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); ROOT=$PWD; HERE=$ROOT/paper_figures/results/2026-12-01-h200-session16
O=$OUT/c4; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 260 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    tests/test_kernel_awq_gemm.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
for v in base new baselate newlate; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
for v in base baselate; do (cd /tmp/$v && patch -s -p1 < $HERE/to-base.patch); done
for v in baselate newlate; do (cd /tmp/$v && patch -s -p1 < $HERE/late.patch); done
grep -c "append=True" /tmp/{base,new,baselate,newlate}/swiftspec_core/kernels/forward.py
grep -c "pdl_trigger();" /tmp/{base,new,baselate,newlate}/cuda/gemm_tile.cuh
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
for r in a b; do for v in base new baselate newlate; do forward $v $r; done; done
cd $OUT && tar czf all.tgz c4
