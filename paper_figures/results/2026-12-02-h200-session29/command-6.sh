#!/usr/bin/env bash
# Session 29, call 6: the host path of a draft step. (1) graph_launch.py: graph.replay()'s host
# time, the whole forward call's, and the GPU idle before the graph, fused and persistent 1B step;
# (2) one qa decode under the profiler, tree:fused, before (A: host-path.patch reversed) and after (B)
# the host-path change (subtree_closed without a scan, the top-k log-prob rows summed at the end);
# (3) tree:fused end to end, six datasets x 2 prompts, A B A B. One H200, carry [".data"].
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/ni; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session29
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/A && mkdir -p /tmp/A && cp -r . /tmp/A/ && (cd /tmp/A && patch -R -s -p1 < $P/host-path.patch) && echo "A: patch reversed"
R=paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12
python3 -m swiftspec_bench.cli run --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda \
    --dtype bfloat16 --systems tree --kernels fused --acceptance replay:$R --datasets qa --limit 1 \
    --max-new-tokens 32 --data-dir .data/eagle --out /tmp/throwaway > $O/throwaway.log 2>&1
echo "throwaway exit $? ($(( $(date +%s) - START )) s)"
PYTHONPATH=. timeout -k 5 120 python3 $P/graph_launch.py > $O/graph-launch.md 2> $O/graph-launch.log
echo "graph_launch exit $? ($(( $(date +%s) - START )) s)"; cat $O/graph-launch.md; tail -2 $O/graph-launch.log
for v in A B; do
  T=$([ $v = A ] && echo /tmp/A || echo $PWD)
  (cd $T && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/profile_decode.py $O/decode-$v.md -- run \
      --target llama-3-8b --draft llama-3.2-1b --weights random --device cuda --dtype bfloat16 --systems tree \
      --kernels fused --acceptance replay:$R --datasets qa --limit 1 --max-new-tokens 256 --data-dir .data/eagle \
      --out $O/decode-$v > $O/decode-$v.log 2>&1)
  echo "decode $v exit $? ($(( $(date +%s) - START )) s)"; grep "decode wall" $O/decode-$v.md
  sed -n "/^| idle after/,/^$/p" $O/decode-$v.md | sed -n 3,4p
done
for half in 1 2; do
  for v in A B; do
    T=$([ $v = A ] && echo /tmp/A || echo $PWD)
    (cd $T && REPLAY=$R TREE_BS=12 DATA_DIR=.data/eagle bash paper_figures/run_2xh200.sh $O/e2e-$v$half 100 \
        "2 --systems tree --kernels fused" > $O/e2e-$v$half.log 2>&1)
    python3 -m swiftspec_bench.cli compare $O/e2e-$v$half --format markdown > $O/e2e-$v$half/compare.md 2>&1
    echo "e2e $v$half ($(( $(date +%s) - START )) s): $(grep -E '\| overall ' $O/e2e-$v$half/compare.md | cut -c30-200)"
  done
done
cd $OUT && tar czf ni.tgz ni
