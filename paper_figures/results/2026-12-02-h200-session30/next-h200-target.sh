#!/usr/bin/env bash
# Prepared at the end of session 30 (NOTES v194), not run: one H200, main at the commit given, no
# carry. ~7 min. persistent-target.patch (branch persistent-target): the persistent kernel's target
# build (Llama-3-8B's layers in one launch; the attention as the fused forward's items, by position)
# and the tree attention's item in cuda/attention_item.cuh. In order:
# (1) the branch's GPU tests: the target build (close to torch; a token's bits whatever the forward;
#     chain, tree, swiftspec exact on it), the fused attention and forward through the refactored
#     item (test_kernel_attention.py, test_gpu_fused.py), the 1B persistent engine (its span argument);
# (2) the 8B forward, ours against persistent (the target build), widths 1, 8, 12, 16, context 1000
#     (the kernels table: x floor beside each);
# (3) ab_replay: the fused 8B forward with the refactored attention item against the original
#     (attention-item-reverse.patch applied to the branch's cuda/: B is the original; B - A > 0 means
#     the refactor is faster);
# (4) the 1B persistent layer probe (bitwise checks; 48.9-49.4 us before).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/nt; mkdir -p $O; P=$PWD/paper_figures/results/2026-12-02-h200-session30
echo "commit $SWIFTSPEC_COMMIT + persistent-target.patch, $(date -u +%FT%TZ)" > $O/env.log
rm -rf /tmp/pt && mkdir -p /tmp/pt && cp -r . /tmp/pt/ && cd /tmp/pt && patch -s -p1 < $P/persistent-target.patch && echo "persistent-target patched"
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
timeout -k 5 240 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_persistent_target.py > $O/tests-target.log 2>&1
echo "target tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-target.log)"; grep -E "^(FAILED|ERROR)|relative error" $O/tests-target.log | head -8
timeout -k 5 120 python3 -m swiftspec_bench.cli kernels --models llama-3-8b --tp 1 --m 1,8,12,16 --context 1000 --ops forward \
    --impl ours,persistent --out $O/kernels > $O/kernels.log 2>&1
echo "kernels exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| forward" $O/kernels/kernels.md; tail -2 $O/kernels.log
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/ab_replay.py --patch $P/attention-item-reverse.patch --models llama-3-8b \
    --width 8 > $O/ab-attention.md 2> $O/ab-attention.log
echo "ab_replay exit $? ($(( $(date +%s) - START )) s)"; tail -6 $O/ab-attention.md
timeout -k 5 150 python3 -m pytest -q -x -rfE -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py \
    tests/test_persistent_forward.py > $O/tests-other.log 2>&1
echo "attention, fused, 1B engine tests exit $? ($(( $(date +%s) - START )) s): $(tail -1 $O/tests-other.log)"
PYTHONPATH=. timeout -k 5 100 python3 paper_figures/persistent_mlp.py --attention --rows 9 --rings 1024x4 > $O/probe-1b.md 2> $O/probe-1b.log
echo "1b probe exit $? ($(( $(date +%s) - START )) s)"; grep -E "^\| (ours|persistent 1024x4, deep \|)" $O/probe-1b.md | cut -c1-120
cd $OUT && tar czf nt.tgz nt
