#!/usr/bin/env bash
# Session 33, call 7 (nvidia-h200, no carry; ran at 5ec5fc1 as `SWIFTSPEC_COMMIT=5ec5fc1 bash command-7.sh`, 38 s, after three refused starts), on branch awq-chain (main + awq-chain.patch + two
# ablations, NOTES v209): the chain's o and down without x loads, and as one launch a phase
# without weight copies (wrong outputs: times only), beside c5's rows.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c7; mkdir -p $O
echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)" > $O/env.log
PYTHONPATH=. timeout -k 5 300 python3 paper_figures/awq_chain_probe.py --out $O/probe --ops o,down --layers 0 > $O/probe.log 2>&1
echo "probe: exit $?"; grep -E "plan|S16 C1 D8" $O/probe.log | grep -v "C2\|D4"
