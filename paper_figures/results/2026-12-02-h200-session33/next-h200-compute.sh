#!/usr/bin/env bash
# Prepared in session 33, not run (NOTES "For the next session (written at the end of the
# thirty-third)", item 3): for one H200, no carry, ~1.5 min. How far each 70B AWQ GEMM's
# dequantization alone is from its floor: awq_gemm.cu built with AWQ_NO_COPIES (no weight bytes
# moved; outputs wrong, times only) at (16, 1) and at plan()'s S, beside the same launches with
# the copies, all without PDL; and the chain's rows as in c7 / c8. Applies the session's two
# patches to the copy of main it runs in.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
HERE=paper_figures/results/2026-12-02-h200-session33
for p in awq-chain.patch awq-chain-ablations.patch; do
  git apply $HERE/$p 2>/dev/null || patch -p1 -s < $HERE/$p || { echo "error: $p does not apply"; exit 2; }
done
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/compute; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT + the two patches, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 400 python3 paper_figures/awq_chain_probe.py --out $O/probe --layers 0 --ops ${OPS:-qkv,o,gate_up,down} > $O/probe.log 2>&1
echo "probe: exit $?"; grep -E "plan|no PDL|no copies" $O/probe.log
