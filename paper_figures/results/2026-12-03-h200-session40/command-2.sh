#!/usr/bin/env bash
# Session 40, call 2 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session40/command-2.sh
# (NOTES v236). A real-weight Llama-3-70B AWQ checkpoint on one H200, read part by part
# (models/checkpoint_parts.py). No 40 GB file can travel here, so the machine writes one itself:
# swiftspec_bench.random_checkpoint draws --weights random's seed-0 values at the real shape and
# stores them in AutoAWQ's layout. Then, 1 qa prompt, 32 new tokens:
#   A  --target FOLDER --quant awq --systems ar      in process, no twin (the whole way: 40 + 140 GB)
#   B  --target llama-3-70b --weights random --quant awq --systems ar   must emit A's tokens
#   C  A's folder at --tp 2, both ranks on the one GPU (SWIFTSPEC_SHARED_GPU=1: times void)
#   D  --systems hf-ar: the twin is built (140 GB in bf16): how a run that does not fit ends
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c2; mkdir -p $O; CK=/tmp/llama-3-70b-awq
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; free -g | head -2; df -h /tmp | tail -1; } > $O/env.log
tail -2 $O/env.log
{ time python3 -m swiftspec_bench.random_checkpoint llama-3-70b $CK --awq --seed 0; } > $O/write.log 2>&1
echo "write: exit $? $(grep wrote $O/write.log) $(grep real $O/write.log) ($(( $(date +%s) - START )) s); on disk $(du -sh $CK | cut -f1)"
DEADLINE=$(( START + 565 ))
step() {  # step NAME LIMIT ARGS...: one run (its limit cut to the deadline), its GPU memory sampled every second
  local name=$1 limit=$2 left=$(( DEADLINE - $(date +%s) )); shift 2
  (( left < limit )) && limit=$left
  if (( limit < 45 )); then echo "$name skipped: ${left} s left"; return; fi
  ( while sleep 1; do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; done ) > $O/memory-$name.log 2>&1 &
  local sampler=$!
  timeout -k 5 $limit python3 -m swiftspec_bench.cli run --datasets qa --limit 1 --max-new-tokens 32 \
      --data-dir .data/eagle --device cuda "$@" > $O/run-$name.log 2>&1
  local rc=$?; kill $sampler
  local peak=$(awk -F', ' '{split($2,a," "); if (a[1]+0 > m) m = a[1]+0} END {print m+0}' $O/memory-$name.log)
  echo "$name: exit $rc, largest process ${peak} MiB ($(( $(date +%s) - START )) s); $(grep -E '^error' $O/run-$name.log | head -1 | cut -c1-240)"
}
step A 150 --target $CK --quant awq --systems ar --out $O/checkpoint
step B 150 --target llama-3-70b --weights random --quant awq --systems ar --out $O/random
SWIFTSPEC_SHARED_GPU=1 step C 170 --target $CK --quant awq --systems ar --tp 2 --out $O/checkpoint
python3 - "$O" <<'PY' 2>&1 | tee $O/same-tokens.log | tail -2
import sys, pandas as pd
o = sys.argv[1]
rows = pd.concat([pd.read_parquet(f"{o}/{d}/results.parquet").assign(folder=d) for d in ("checkpoint", "random")])
print(rows[["folder", "system", "weights", "quant", "new_tokens", "output_sha"]].to_string(index=False))
a = rows[(rows.folder == "checkpoint") & (rows.system == "ar")].output_sha.tolist()
b = rows[(rows.folder == "random") & (rows.system == "ar")].output_sha.tolist()
print("checkpoint ar emits random ar's tokens:", a == b and len(a) == 1)
PY
step D 600 --target $CK --quant awq --systems hf-ar --out $O/twin
rm -rf $CK $O/*/results.csv
cd "$OUT" && tar czf c2.tgz c2 && rm -rf c2
