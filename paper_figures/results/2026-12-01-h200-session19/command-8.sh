#!/usr/bin/env bash
# Call 8 of the nineteenth session (nvidia-h200; NOTES v120): the norm kernels load their weights
# before the PDL wait (norm-early.patch; bits unchanged). The norm GPU tests, then the 8B forward
# (its 64 norm kernels) base / early / early / base.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session19
O=$OUT/c8; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT + norm-early.patch, $(date -u +%FT%TZ)" > $O/env.log
timeout -k 5 60 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_norm.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -5
for v in base early; do rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/; done
(cd /tmp/base && patch -s -R -p1 < $HERE/norm-early.patch) && echo "base: kEarly lines $(grep -c kEarly /tmp/base/cuda/norm.cu)"
run() {  # run TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 40 python3 -m swiftspec_bench.cli kernels --models llama-3-8b \
      --tp 1 --m 8 --context 1000 --ops forward --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "$1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| forward " $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
run base a; run early a; run early b; run base b
cd $OUT && tar czf all.tgz c8
