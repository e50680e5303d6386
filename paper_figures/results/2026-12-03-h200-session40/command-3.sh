#!/usr/bin/env bash
# Session 40, call 3 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session40/command-3.sh
# (NOTES v237). (1) A model whose weights alone exceed the GPU, in process (llama-3-70b in fp32,
# 282 GB; the first try's bf16 141 GB fits the H200's 150 GB): refused at once with one error line
# (models/fits.py), not after minutes of drawing.
# (2) Where the AWQ Llama-3-70B's 72.6 GB a process (call 2's A and B, ~40 GB of weights) goes:
# paper_figures/memory_stages.py, stage by stage, fused kernels, then torch's.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
timeout -k 5 120 python3 -m swiftspec_bench.cli run --target llama-3-70b --weights random --dtype float32 --systems ar --datasets qa \
    --limit 1 --max-new-tokens 8 --data-dir .data/eagle --device cuda --out $O/too-big > $O/too-big.log 2>&1
echo "too big: exit $? after $(( $(date +%s) - START )) s: $(grep -E '^error' $O/too-big.log | cut -c1-300)"
for k in fused torch; do
  PYTHONPATH=. timeout -k 5 170 python3 paper_figures/memory_stages.py llama-3-70b --quant awq --kernels $k > $O/stages-$k.log 2>&1
  echo "== $k: exit $? ($(( $(date +%s) - START )) s)"; grep -E "allocated|Error|error" $O/stages-$k.log | tail -8
done
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
