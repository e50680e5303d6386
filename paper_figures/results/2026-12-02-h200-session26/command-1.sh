#!/usr/bin/env bash
# Prepared at the end of the twenty-fifth session (NOTES v161), on branch persistent-attn: check it
# out first (`git checkout persistent-attn`), then export SWIFTSPEC_COMMIT and run this on one H200.
# The whole 1B layer in the persistent probe (--attention: qkv with RoPE and the append, the
# attention's chunks and merge, o, the MLP block) against ours (gemm, tree_attention, gemm, ...),
# then the layer's GEMMs alone (--qkv) as c14 for the refactor's regression. ~1.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/n1; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -5 $O/$label.log
}
run layer-m8 --attention --rows 8
run layer-m1 --attention --rows 1
run qkv-m8 --qkv --rows 8
cd $OUT && tar czf n1.tgz n1
