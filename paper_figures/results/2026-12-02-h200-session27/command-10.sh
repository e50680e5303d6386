#!/usr/bin/env bash
# Session 27, call 10 (NOTES v184), one H200, main at the commit given: the layer at M = 9 on rings
# 1024x4 and 1024x5 (both fit at M = 9 now), the timeline on 1024x4. ~1 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c10; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/persistent_mlp.py --attention --rows 9 --rings 1024x4,1024x5 --timeline \
    > $O/layer-m9.md 2> $O/layer-m9.log
echo "exit $?"; grep -E "^\| (ours|persistent 1024x[45], deep)|^\| [QSROAB] \(" $O/layer-m9.md | cut -c1-130; tail -2 $O/layer-m9.log
cd $OUT && tar czf c10.tgz c10
