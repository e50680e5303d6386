#!/usr/bin/env bash
# Session 41, call 1 (nvidia-h200, carry .data), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session41/command-1.sh
# (NOTES v239). Session 40's real-checkpoint code on the GPU for the first time:
#   1. tests/test_gpu.py and tests/test_checkpoint_parts.py at this commit;
#   2. Llama-3-8B and Llama-3.2-1B checkpoint folders written here (random_checkpoint, bf16: the
#      values --weights random draws), then run as a user runs their own models, bf16, fused kernels,
#      real acceptance, qa + gsm8k x 2, 32 tokens: A the 1B folder as draft, B the 8B folder as its
#      own draft (long accepted paths); each folder's header checks, fingerprints, losslessness;
#   3. A resumed with the folders spelled otherwise (trailing slash, ..): nothing to do;
#   4. memory_stages.py for the 8B and the 1B, fused: any stage above its weights.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
START=$(date +%s); O=$OUT/c1; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; nvidia-smi --query-gpu=name,memory.total --format=csv; } > $O/env.log
t() { echo "($(( $(date +%s) - START )) s)"; }
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT: python3 -m pytest -q tests/test_gpu.py tests/test_checkpoint_parts.py tests/test_checkpoint_checks.py"
  time timeout -k 5 200 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py tests/test_checkpoint_parts.py tests/test_checkpoint_checks.py; } \
    > $O/gpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
echo "tests: $(grep -E 'passed|failed' $O/gpu-tests-$SWIFTSPEC_COMMIT.log | tail -1) $(t)"
for m in llama-3-8b llama-3.2-1b; do
  python3 -m swiftspec_bench.random_checkpoint $m /tmp/$m > $O/write-$m.log 2>&1
  echo "write $m: exit $? $(du -sh /tmp/$m | cut -f1) $(t)"
done
run() {  # run NAME ARGS...
  local name=$1; shift
  timeout -k 5 150 python3 -m swiftspec_bench.cli run --datasets qa,gsm8k --limit 2 --max-new-tokens 32 \
      --data-dir .data/eagle --device cuda --kernels fused --systems ar,chain,tree,swiftspec "$@" > $O/run-$name.log 2>&1
  echo "$name: exit $? $(grep -E '^error|nothing to do' $O/run-$name.log | head -1 | cut -c1-200) $(t)"
}
run A --target /tmp/llama-3-8b --draft /tmp/llama-3.2-1b --out $O/draft-1b
run B --target /tmp/llama-3-8b --draft /tmp/llama-3-8b --out $O/draft-self
run A-respelled --target /tmp/llama-3-8b/ --draft /tmp/../tmp/llama-3.2-1b --out $O/draft-1b
for d in draft-1b draft-self; do
  python3 -m swiftspec_bench.cli compare $O/$d --format markdown > $O/$d/compare.md 2>&1
  echo "## $d: $(grep -m1 'lossless' $O/$d/compare.md)"; grep -E "^\| (ar|chain|tree|swiftspec)" $O/$d/compare.md | cut -c1-160
done
python3 - "$O" <<'PY' 2>&1 | tee $O/rows.log
import sys, pandas as pd
rows = pd.read_parquet(f"{sys.argv[1]}/draft-1b/results.parquet")
print(len(rows), "rows; target", rows.target.unique(), "draft", rows.draft.unique())
print("target_sha", rows.target_sha.unique(), "draft_sha", rows.draft_sha.unique())
PY
for m in llama-3-8b llama-3.2-1b; do
  PYTHONPATH=. timeout -k 5 120 python3 paper_figures/memory_stages.py $m --kernels fused > $O/stages-$m.log 2>&1
  echo "== stages $m: exit $? $(t)"; cat $O/stages-$m.log | tail -6
done
rm -rf /tmp/llama-3-8b /tmp/llama-3.2-1b $O/*/results.csv
cd "$OUT" && tar czf c1.tgz c1 && rm -rf c1
