#!/usr/bin/env bash
# Session 27, call 1 (NOTES "Twenty-seventh session, call 1"), one H200, main at the commit given.
# (1) The engine's launch path after the last review's change (build.launch_config / launch_ex take a
#     cluster): the GEMM, attention and fused-forward GPU tests, and the forward / draft_step rows.
# (2) The three prepared persistent branches (v173-v175), each applied to its own copy of main
#     (merge-spread.patch, y-ring.patch and rows16.patch are `git diff main <branch>`), with main's
#     layer beside them on the same warm machine. ~7-8 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O; HERE=$PWD/paper_figures/results/2026-12-02-h200-session27
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader >> $O/env.log
timeout -k 5 170 python3 -m pytest -q -x -p no:cacheprovider tests/test_cuda_compile.py tests/test_kernel_gemm.py \
    tests/test_kernel_attention.py tests/test_fused_forward.py > $O/tests.log 2>&1
echo "tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests.log)"
timeout -k 5 90 python3 -m swiftspec_bench.cli kernels --models llama-3.2-1b,llama-3-8b --tp 1 --m 8 --context 1000 \
    --ops forward,draft_step --impl ours --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (op|forward|draft_step) " $O/kernels/kernels.md
for v in merge-spread y-ring rows16; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; cp -r swiftspec_core swiftspec_bench paper_figures cuda tests pyproject.toml /tmp/$v/
  (cd /tmp/$v && patch -s -p1 < $HERE/$v.patch) && echo "$v patched"
done
run() {  # run BRANCH LABEL ARGS.. (main: this tree; a branch: its patched copy)
  local tree=/tmp/$1 label=$1-$2; shift 2; [ $label != ${label#main-} ] && tree=$PWD
  if (( $(date +%s) - START > 540 )); then echo "$label skipped (time)"; return; fi
  (cd $tree && PYTHONPATH=. timeout -k 5 120 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log)
  echo "$label exit $? ($(( $(date +%s) - START )) s)"
  grep -E "^\| (ours|persistent|[A-Z] \(|the layer)" $O/$label.md | cut -c1-150; tail -2 $O/$label.log
}
run main layer1000 --attention --rows 8 --timeline
run merge-spread layer1000 --attention --rows 8 --timeline
run merge-spread layer2000 --attention --rows 8 --context 2000 --timeline
run y-ring layer1000 --attention --rows 8 --timeline
run y-ring qkv --qkv --rows 8 --timeline
run rows16 qkv-m8 --qkv --rows 8 --rings 1024x3,512x5
run rows16 qkv-m9 --qkv --rows 9 --rings 512x5 --timeline
run rows16 qkv-m16 --qkv --rows 16 --rings 512x5 --timeline
run rows16 layer-m8 --attention --rows 8
cd $OUT && tar czf c1.tgz c1
