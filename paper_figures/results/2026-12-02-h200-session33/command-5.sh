#!/usr/bin/env bash
# Session 33, call 5 (nvidia-h200, no carry; ran at 5ef408d as `SWIFTSPEC_COMMIT=5ef408d bash command-5.sh`, 55 s): the persistent AWQ chain (cuda/awq_chain.cu, NOTES
# v204): its GPU tests (every phase bitwise awq_gemm at (S, C), rows invariant, graph replays),
# then paper_figures/awq_chain_probe.py (the 70B's four GEMMs at M = 8 as separate launches and as
# a chain; a layer mix of 8 layers). Timeouts so that a hung grid barrier ends the call.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c5; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv >> $O/env.log 2>&1
timeout -k 5 240 python3 -m pytest -q tests/test_awq_chain.py > $O/tests.log 2>&1
echo "tests: exit $?"; tail -4 $O/tests.log
PYTHONPATH=. timeout -k 5 300 python3 paper_figures/awq_chain_probe.py --out $O/probe > $O/probe.log 2>&1
echo "probe: exit $?"; tail -3 $O/probe.log
cat $O/probe/awq_chain.md 2>/dev/null | tail -n +5
