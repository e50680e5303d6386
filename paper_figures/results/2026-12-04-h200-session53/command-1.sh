#!/usr/bin/env bash
# Session 53, call 1 (NOTES v291), from the repo root:
#   SWIFTSPEC_COMMIT=<commit> bash <this file>
# 1. read_probe.py on the four 70B shapes (the pattern's ceiling a launch, with and without PDL);
# 2. awq_fp16_probe.py's o, qkv and down (M = 1, 8, 16), the GEMM beside its pattern on the same
#    machine; 3. within what is left of 560 s, the GPU tests of the files 4f49fde touched
#    (tests/conftest.py's sys.path), test_gpu.py and the new test_read_probe.py, a file a pytest.
set -u
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
source paper_figures/device_env.sh
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
C=$OUT/c1; mkdir -p $C
PYTHONPATH=. timeout 150 python3 paper_figures/read_probe.py > $C/read-probe.md 2> $C/read-probe.err
echo "read_probe exit $?" >> $C/read-probe.err
PYTHONPATH=. timeout 80 python3 paper_figures/awq_fp16_probe.py --out $C/fp16 --ops o,qkv,down > $C/fp16-probe.log 2>&1
echo "awq_fp16_probe exit $?" >> $C/fp16-probe.log
bash paper_figures/gpu_test_files.sh $C/tests $(( 560 - SECONDS )) tests/test_gpu.py tests/test_read_probe.py \
  tests/test_attention_trace.py tests/test_awq_fp16_probe.py tests/test_cluster_occupancy.py \
  tests/test_forward_ablation.py tests/test_forward_timeline.py tests/test_graft_probe.py \
  tests/test_persistent_mlp.py tests/test_persistent_timeline.py tests/test_plan_in_forward.py \
  tests/test_plan_sweep.py tests/test_profile_decode.py tests/test_profile_forward.py tests/test_profile_host.py
cat $C/read-probe.md; tail -15 $C/fp16-probe.log
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
