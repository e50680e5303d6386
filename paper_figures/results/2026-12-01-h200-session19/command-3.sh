#!/usr/bin/env bash
# Call 3 of the nineteenth session (nvidia-h200; NOTES v116): the bf16 norms carried between the
# GEMMs (branch carried-norms; carried.patch = its diff from main 5524ab3 in cuda/ and
# swiftspec_core/). 1. GPU tests of the GEMMs, the fused forwards (three bodies) and AWQ's norms.
# 2. Forward rows (kernel bench: forward M = 8 and draft_step, 8B and 1B) of base (main: the 8B's
# norm kernels, the 1B's norms inside the GEMMs) / new (the 8B's norms carried) / all (the 1B's
# carried too: the rule's dim bound dropped) / new / base. 3. forward_timeline.py on new: 8B and 1B
# (with one layer's blocks), the 70B AWQ.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); HERE=$PWD/paper_figures/results/2026-12-01-h200-session19
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; } > $O/env.log 2>&1
timeout -k 5 200 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_gemm_norm.py tests/test_kernel_gemm_swiglu.py \
    tests/test_kernel_gemm.py tests/test_gpu_fused.py tests/test_awq_norms.py tests/test_fused_forward.py > $O/gpu-tests.log 2>&1
echo "tests: exit $? $(tail -1 $O/gpu-tests.log) ($(( $(date +%s) - START )) s)"
grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -8
for v in base new all; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests /tmp/$v/
done
(cd /tmp/base && patch -s -R -p1 < $HERE/carried.patch) && echo "base: $(ls /tmp/base/swiftspec_core/kernels/norm_epilogue.py 2>&1 | grep -c 'No such') (1 = main's tree)"
sed -i 's/ and (a.quant == "awq" or a.dim > NORMS_IN_GEMMS_MAX_DIM)$//' /tmp/all/swiftspec_core/kernels/forward.py
echo "all: $(diff swiftspec_core/kernels/forward.py /tmp/all/swiftspec_core/kernels/forward.py | grep -c '^>') line changed"
forward() {  # forward TREE RUN
  (cd /tmp/$1 && PYTHONPATH=. timeout -k 5 75 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b \
      --tp 1 --m 8 --ops forward,draft_step --impl ours --out $O/kernels-$1-$2 > $O/kernels-$1-$2.log 2>&1)
  echo "forward $1 ($2) exit $? ($(( $(date +%s) - START )) s): $(grep -E "^\| (forward|draft_step)" $O/kernels-$1-$2/kernels.md | cut -d'|' -f2,3,7,9 | tr -d ' ' | tr '\n' ' ')"
}
forward base a; forward new a; forward all a; forward new b; forward base b
for mq in "llama-3-8b,llama-3.2-1b none" "llama-3-70b awq"; do
  set -- $mq
  PYTHONPATH=. timeout -k 5 90 python3 paper_figures/forward_timeline.py --models $1 --quant $2 \
      --csv $O/timeline-$2.csv --blocks $O/blocks-$2.csv > $O/timeline-$2.md 2> $O/timeline-$2.log
  echo "timeline $1 exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (norm|qkv|attention|o|gate_up|down) " $O/timeline-$2.md
  tail -2 $O/timeline-$2.log | grep -i error
done
cd $OUT && tar czf all.tgz c3
