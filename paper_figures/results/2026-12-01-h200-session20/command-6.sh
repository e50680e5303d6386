#!/usr/bin/env bash
# Call 6 of the twentieth session (nvidia-h200): main as landed (merge-rounds and tree-rows-pairs
# merged), from the repository root: test_bench_run.py (c5 ran it from a copy without
# datasets.yaml: its failures were that; the csv read's round trip fixed in the nineteenth session
# is still unconfirmed on this machine's pandas), the attention's GPU tests and the fused decoders
# exact, then the forward rows for the record (8B at M = 8 and 12, the 1B's draft step). ~3 min.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c6; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 150 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_bench_run.py tests/test_kernel_attention.py \
    tests/test_gpu_fused.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
PYTHONPATH=. timeout -k 5 70 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 8,12 --context 1000 \
    --ops forward --impl ours --out $O/fwd > $O/fwd.log 2>&1
PYTHONPATH=. timeout -k 5 50 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b --tp 1 --m 8 --context 1000 \
    --ops forward,draft_step --impl ours --out $O/step > $O/step.log 2>&1
echo "rows ($(( $(date +%s) - START )) s): $(cat $O/fwd/kernels.md $O/step/kernels.md | grep -E "^\| (forward|draft_step) " \
    | cut -d'|' -f2,3,5,7,9 | tr -d ' ' | tr '\n' ' ')"
cd $OUT && tar czf all.tgz c6
