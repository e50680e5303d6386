#!/usr/bin/env bash
# Session 26, call 11 (NOTES v170), one H200, branch quiet-o: where the persistent layer's
# time goes with o_proj's phase issuing no gate_up page (mode "deep, O quiet"), beside deep and
# shallow, M = 8, context 1000 and --qkv. ~1.5 min warm.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c11; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
run() {  # run LABEL ARGS..
  local label=$1; shift
  PYTHONPATH=. timeout -k 5 150 python3 paper_figures/persistent_mlp.py "$@" > $O/$label.md 2> $O/$label.log
  echo "$label exit $?"; cat $O/$label.md; tail -3 $O/$label.log
}
run layer-ctx1000 --attention --rows 8 --timeline
run qkv --qkv --rows 8 --timeline
cd $OUT && tar czf c11.tgz c11
