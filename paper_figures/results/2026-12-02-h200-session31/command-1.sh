#!/usr/bin/env bash
# Session 31, call 1 (one H200, no carry), main at the commit given. (1) tests/test_gpu.py at HEAD
# (the review's item: its log becomes paper_figures/results/gpu-tests-<commit>.log); (2) v194, the
# persistent target build (session30/persistent-target.patch = branch persistent-target): its GPU
# tests, then the 8B forward, ours against persistent, widths 1, 8, 12, 16, context 1000.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/s1; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session30
echo "commit $SWIFTSPEC_COMMIT (+ persistent-target.patch for the target), $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi >> $O/env.log 2>&1
timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_gpu.py > $O/gpu-tests.log 2>&1
echo "test_gpu.py at HEAD exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/gpu-tests.log)"
rm -rf /tmp/pt && mkdir -p /tmp/pt && cp -r . /tmp/pt/ && cd /tmp/pt && patch -s -p1 < $P/persistent-target.patch && echo "persistent-target patched"
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
timeout -k 5 220 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py > $O/tests-target.log 2>&1
echo "target tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-target.log)"
grep -E "^(FAILED|ERROR)|relative error|Error" $O/tests-target.log | head -10
timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 1,8,12,16 --context 1000 --ops forward \
    --impl ours,persistent --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| forward" $O/kernels/kernels.md; tail -2 $O/kernels.log
cd $OUT && tar czf s1.tgz s1
