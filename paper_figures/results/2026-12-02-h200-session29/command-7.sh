#!/usr/bin/env bash
# Session 29, call 7: call 6's end to end again in the other order (B A B A), humaneval, qa and
# gsm8k x 2 (where B fell behind A in call 6), tree:fused; A = host-path.patch reversed. One H200,
# carry [".data"].
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nj; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session29
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/A && mkdir -p /tmp/A && cp -r . /tmp/A/ && (cd /tmp/A && patch -R -s -p1 < $P/host-path.patch) && echo "A: patch reversed"
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
for run in B1 A1 B2 A2; do
  v=${run:0:1}; T=$([ $v = A ] && echo /tmp/A || echo $PWD)
  (cd $T && REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$run 60 \
      "2 --systems tree --kernels fused --datasets humaneval,qa,gsm8k" > $O/e2e-$run.log 2>&1)
  python3 -m swiftspec_bench.cli compare $O/e2e-$run --format markdown > $O/e2e-$run/compare.md 2>&1
  echo "e2e $run ($(( $(date +%s) - START )) s): $(grep -E '\| overall ' $O/e2e-$run/compare.md | cut -c30-200)"
done
cd $OUT && tar czf nj.tgz nj
