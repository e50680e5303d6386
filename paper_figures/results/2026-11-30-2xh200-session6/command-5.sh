#!/usr/bin/env bash
# Sixth session, call 5 (nvidia-h200-x2, the session's last ~2 minutes): call 4 measured d = 4 on
# every query and a steady link wait of 1.59 ms (30% of the verification). The same queries'
# first 2 a dataset at d = 3 and d = 4 given (--draft-steps), one after the other, same settings.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c5; mkdir -p $O
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py $O/replay-source $G paper_figures/results/cpu-qwen-pair > $O/replay.log
for d in 3 4; do
  REPLAY=$O/replay-source TREE_BS=8 bash paper_figures/run_2xh200.sh $O/d$d 55 \
      "2 --systems swiftspec --split 1+1 --kernels fused --draft-steps $d" > $O/d$d.log 2>&1
  python3 -m swiftspec_bench.cli compare $O/d$d --format markdown > $O/d$d/compare.md 2>&1
  echo "d=$d: $(grep -E "overall" $O/d$d/compare.md | cut -d'|' -f5-17)"
done
rm -rf $O/replay-source
cd $OUT && tar czf all.tgz c5
