#!/usr/bin/env bash
# Call 7 of the nineteenth session (nvidia-h200): every kernel launch through cuLaunchKernelEx
# (build._launch_ex; no CuPy ExternalStream, deprecated in CuPy 14: c1's 732 warnings). The launches
# without PDL (the AWQ clusters, SWIFTSPEC_PDL=0) are the ones that changed: the AWQ launch shapes
# (clusters included), PDL on and off bitwise, the attention; no DeprecationWarning from build.py.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c7; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
timeout -k 5 170 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_gpu_fused.py \
    tests/test_kernel_attention.py -k "launch_shape or programmatic or bitwise or graph" > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log)"; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
echo "ExternalStream warnings: $(grep -c ExternalStream $O/gpu-tests.log)"
