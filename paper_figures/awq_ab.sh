#!/usr/bin/env bash
# A change to the AWQ kernels A/B on one H200, as one device call (sessions 46 and 49 ran it by hand
# three times): the commit as is (base, copied to a temporary folder) against the commit with PATCH applied
# (new, in the device's working tree). No carry.
#
#   SWIFTSPEC_COMMIT=<hash> bash paper_figures/awq_ab.sh OUT PATCH
#
# 1. awq_output_hash.py in both trees (fingerprints equal: the same arithmetic, bit for bit).
# 2. The 70B AWQ forward (profile_forward.py), new / base alternated: two pairs, a third in time.
# 3. The AWQ GPU tests on new. 4. awq_fp16_probe.py (o, qkv, down at M = 1, 8, 16) in both, in time.
# Prints one line a step; OUT gets every log. A patch made from two commits: git diff BASE NEW -- cuda.
set -uo pipefail
if [ $# -ne 2 ] || [ ! -f "$2" ]; then echo "error: usage: awq_ab.sh OUT PATCH (PATCH a file; got: $*)"; exit 2; fi
if [ -z "${SWIFTSPEC_COMMIT:-}" ]; then echo "error: export SWIFTSPEC_COMMIT (the device's copy has no .git)"; exit 2; fi
OUT=$1; PATCH=$(realpath "$2")
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
START=$(date +%s); mkdir -p "$OUT"; OUT=$(realpath "$OUT")  # absolute: the base side runs elsewhere
elapsed() { echo $(( $(date +%s) - START )); }
if ! patch -p1 --dry-run < "$PATCH" > "$OUT/patch.log" 2>&1; then
  echo "error: $(basename "$PATCH") does not apply to this tree ($OUT/patch.log)"; exit 2
fi
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
B=$(mktemp -d)/base; trap 'rm -rf "$(dirname "$B")"' EXIT; mkdir -p $B/paper_figures
cp -r cuda swiftspec_core swiftspec_bench pyproject.toml $B/ && cp paper_figures/*.py $B/paper_figures/
patch -p1 -s < "$PATCH"  # new: the device's working tree
{ echo "commit $SWIFTSPEC_COMMIT + $(basename "$PATCH") (base: the commit as is), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > "$OUT/env.log" 2>&1
tree() { [ "$1" = base ] && echo $B || echo .; }  # tree NAME: where that side's code is
for t in new base; do
  (cd "$(tree $t)" && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > "$OUT/hashes-$t.json" 2> "$OUT/hashes-$t.log")
done
if cmp -s "$OUT/hashes-base.json" "$OUT/hashes-new.json"; then echo "fingerprints: all $(grep -c '": "' "$OUT/hashes-new.json") equal ($(elapsed) s)"
else echo "fingerprints DIFFER ($(elapsed) s):"; diff "$OUT/hashes-base.json" "$OUT/hashes-new.json" | head; fi
profile() {  # profile SIDE RUN: the 70B AWQ forward on that side's code
  (cd "$(tree $1)" && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv "$OUT/profile-$1-$2.csv" > "$OUT/profile-$1-$2.md" 2> "$OUT/profile-$1-$2.log")
  echo "profile $1-$2 exit $? ($(elapsed) s): $(grep -oE "replay [0-9.]+ us" "$OUT/profile-$1-$2.md")" \
      "$(grep -E "^\| (qkv|o|gate_up|down) " "$OUT/profile-$1-$2.md" | cut -d'|' -f2,5 | tr -s ' ' | tr '\n' ';')"
}
for run in a b c; do
  [ $run = c ] && [ "$(elapsed)" -ge 330 ] && break
  profile new $run; profile base $run
done
timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq_norms.py \
    tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > "$OUT/awq-tests.log" 2>&1
echo "awq tests: exit $? $(tail -1 "$OUT/awq-tests.log") ($(elapsed) s)"
grep -E "^(FAILED|ERROR)" "$OUT/awq-tests.log" | head -8
for t in new base; do
  [ "$(elapsed)" -lt 470 ] || break
  (cd "$(tree $t)" && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/awq_fp16_probe.py --out "$OUT/probe-$t" \
      --ops o,qkv,down > "$OUT/probe-$t.log" 2>&1)
  echo "probe $t: exit $? ($(elapsed) s)"; grep -E "^\| (o|qkv|down) \| (1|8|16) " "$OUT/probe-$t.log" | cut -d'|' -f2-7
done
exit 0  # each step printed its own exit status above
