#!/usr/bin/env bash
# Prepared at the end of session 29 (NOTES v192), not run: one H200, main at the commit given.
# ~4 min. persistent-8b.patch (branch persistent-8b): the persistent kernel's GEMM phases at
# Llama-3-8B's shapes (o's and down's 256 tiles, two a block). In order:
# (1) the 1B layer on main and on the branch (must be bitwise checked and within the drift of main:
#     the 1B's code path changed only in its loops' bounds);
# (2) the branch's 8B probe: the MLP block, o + MLP block, qkv + o + MLP block at M = 8, rings
#     1024x4 and 512x4 (ours: gemm / gemm_swiglu under PDL);
# (3) the branch's engine GPU tests (tests/test_persistent_forward.py: the 1B draft step exact).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/n8; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session29
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/p8 && mkdir -p /tmp/p8 && cp -r . /tmp/p8/ && (cd /tmp/p8 && patch -s -p1 < $P/persistent-8b.patch) && echo "persistent-8b patched"
probe() {  # probe TREE LABEL ARGS..
  (cd $1 && PYTHONPATH=. timeout -k 5 100 python3 paper_figures/persistent_mlp.py "${@:3}" > $O/$2.md 2> $O/$2.log)
  echo "$2 exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (ours|persistent)" $O/$2.md | cut -c1-150; tail -1 $O/$2.log
}
probe . main-1b --attention --rows 9 --rings 1024x4
probe /tmp/p8 p8-1b --attention --rows 9 --rings 1024x4
probe /tmp/p8 p8-8b-mlp --model llama-3-8b --block --rows 8 --rings 1024x4,512x4
probe /tmp/p8 p8-8b-o --model llama-3-8b --o-proj --rows 8 --rings 1024x4
probe /tmp/p8 p8-8b-qkv --model llama-3-8b --qkv --rows 8 --rings 1024x4 --layers 8
probe . main-1b-b --attention --rows 9 --rings 1024x4
(cd /tmp/p8 && PYTHONPATH=. timeout -k 5 120 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_persistent_forward.py \
    > $O/p8-tests.log 2>&1)
echo "persistent-8b engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/p8-tests.log)"
cd $OUT && tar czf n8.tgz n8
