#!/usr/bin/env bash
# Session 51, call 2 (NOTES v286), from the repo root: SWIFTSPEC_COMMIT=<commit> bash <this file>
# bf16-evict-first.patch (the bf16 GEMMs' weight loads and the persistent kernel's weight pages
# evict-first in L2) against the commit as is (base, a copy): the kernels table's 8B forward and 1B
# draft step (width 9), ours and persistent, context 1000, the sides alternated, two rounds (a third
# in time); then the patched side's GPU tests of those kernels, file by file, in what is left.
set -u
source paper_figures/device_env.sh
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-04-h200-session51
O=$OUT/c2; mkdir -p $O; START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
BASE=$(mktemp -d); cp -r cuda swiftspec_core swiftspec_bench paper_figures tests pyproject.toml $BASE/
patch -p1 -s < $HERE/bf16-evict-first.patch || { echo "error: bf16-evict-first.patch does not apply"; exit 2; }
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
{ echo "commit $SWIFTSPEC_COMMIT + bf16-evict-first.patch (base: the commit as is), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > $O/env.log 2>&1
bench() {  # bench SIDE RUN OP MODEL
  local dir; [ $1 = new ] && dir=$PWD || dir=$BASE
  (cd $dir && PYTHONPATH=. timeout -k 5 150 python3 -m swiftspec_bench.cli kernels --models $4 --tp 1 --m 8 --context 1000 \
      --ops $3 --impl ours,persistent --out $O/k-$3-$1-$2 > $O/k-$3-$1-$2.log 2>&1)
  echo "$3 $1-$2 exit $? ($(elapsed) s): $(grep -E "^\| $3 " $O/k-$3-$1-$2/kernels.md | cut -d'|' -f7-11)"
}
for run in a b c; do
  [ $run = c ] && [ "$(elapsed)" -ge 300 ] && break
  for t in new base; do bench $t $run forward llama-3-8b; bench $t $run draft_step llama-3.2-1b; done
done
bash paper_figures/gpu_test_files.sh $O/tests $(( 570 - $(elapsed) )) tests/test_kernel_gemm.py tests/test_kernel_gemm_swiglu.py \
    tests/test_kernel_gemm_norm.py tests/test_persistent_forward.py tests/test_persistent_target.py tests/test_gpu_fused.py
cat $O/tests/summary.md
rm -rf $BASE; cd $OUT && tar czf c2.tgz c2 && rm -rf c2
