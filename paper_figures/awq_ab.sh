#!/usr/bin/env bash
# A change to the AWQ kernels A/B on one H200, as one device call (sessions 46 and 49 ran it by hand
# three times): the commit as is (base, copied to a temporary folder) against the commit with PATCH applied
# (new, in the device's working tree), and against each further patch (new2, new3, ..: each applied
# to its own copy of the commit). No carry.
#
#   SWIFTSPEC_COMMIT=<hash> bash paper_figures/awq_ab.sh OUT PATCH [PATCH ...]
#
# 1. awq_output_hash.py on every side (fingerprints equal to base's: the same arithmetic, bit for bit).
# 2. The 70B AWQ forward (profile_forward.py), the sides alternated: two rounds, a third in time.
# 3. The AWQ GPU tests on every patched side. 4. awq_fp16_probe.py (o, qkv, down at M = 1, 8, 16) on
#    every side, in time. Prints one line a step; OUT gets every log. A patch made from two commits:
#    git diff BASE NEW -- cuda.
set -uo pipefail
if [ $# -lt 2 ]; then echo "error: usage: awq_ab.sh OUT PATCH [PATCH ...] (got: $*)"; exit 2; fi
for p in "${@:2}"; do
  if [ ! -f "$p" ]; then echo "error: usage: awq_ab.sh OUT PATCH [PATCH ...] (not a file: $p)"; exit 2; fi
done
if [ -z "${SWIFTSPEC_COMMIT:-}" ]; then echo "error: export SWIFTSPEC_COMMIT (the device's copy has no .git)"; exit 2; fi
OUT=$1; shift
PATCHES=(); for p in "$@"; do PATCHES+=("$(realpath "$p")"); done
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
START=$(date +%s); mkdir -p "$OUT"; OUT=$(realpath "$OUT")  # absolute: the other sides run elsewhere
elapsed() { echo $(( $(date +%s) - START )); }
for p in "${PATCHES[@]}"; do
  if ! patch -p1 --dry-run < "$p" > "$OUT/patch.log" 2>&1; then
    echo "error: $(basename "$p") does not apply to this tree ($OUT/patch.log)"; exit 2
  fi
done
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
COPIES=$(mktemp -d); trap 'rm -rf "$COPIES"' EXIT
SIDES=(new); NAMES="$(basename "${PATCHES[0]}")"
for side in base $(seq -f "new%g" 2 ${#PATCHES[@]}); do  # base, then new2 ..: copies of the commit as is
  mkdir -p $COPIES/$side/paper_figures
  cp -r cuda swiftspec_core swiftspec_bench tests pyproject.toml $COPIES/$side/ && cp paper_figures/*.py $COPIES/$side/paper_figures/
done
for k in $(seq 2 ${#PATCHES[@]}); do
  (cd $COPIES/new$k && patch -p1 -s < "${PATCHES[$((k - 1))]}"); SIDES+=(new$k); NAMES+=", new$k: $(basename "${PATCHES[$((k - 1))]}")"
done
patch -p1 -s < "${PATCHES[0]}"  # new: the device's working tree
{ echo "commit $SWIFTSPEC_COMMIT + $NAMES (base: the commit as is), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,clocks.max.sm --format=csv; } > "$OUT/env.log" 2>&1
tree() { [ "$1" = new ] && echo . || echo $COPIES/$1; }  # tree SIDE: where that side's code is
for t in "${SIDES[@]}" base; do
  (cd "$(tree $t)" && PYTHONPATH=. timeout -k 5 90 python3 paper_figures/awq_output_hash.py > "$OUT/hashes-$t.json" 2> "$OUT/hashes-$t.log")
done
for t in "${SIDES[@]}"; do
  if cmp -s "$OUT/hashes-base.json" "$OUT/hashes-$t.json"; then echo "fingerprints $t: all $(grep -c '": "' "$OUT/hashes-$t.json") equal ($(elapsed) s)"
  else echo "fingerprints $t DIFFER ($(elapsed) s):"; diff "$OUT/hashes-base.json" "$OUT/hashes-$t.json" | head; fi
done
profile() {  # profile SIDE RUN: the 70B AWQ forward on that side's code
  (cd "$(tree $1)" && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/profile_forward.py \
      --models llama-3-70b --quant awq --csv "$OUT/profile-$1-$2.csv" > "$OUT/profile-$1-$2.md" 2> "$OUT/profile-$1-$2.log")
  echo "profile $1-$2 exit $? ($(elapsed) s): $(grep -oE "replay [0-9.]+ us" "$OUT/profile-$1-$2.md")" \
      "$(grep -E "^\| (qkv|o|gate_up|down) " "$OUT/profile-$1-$2.md" | cut -d'|' -f2,5 | tr -s ' ' | tr '\n' ';')"
}
for run in a b c; do
  [ $run = c ] && [ "$(elapsed)" -ge 330 ] && break
  for t in "${SIDES[@]}" base; do profile $t $run; done
done
for t in "${SIDES[@]}"; do
  (cd "$(tree $t)" && PYTHONPATH=. timeout -k 5 120 python3 -m pytest -q -rfE -p no:cacheprovider tests/test_kernel_awq_gemm.py \
      tests/test_awq_norms.py tests/test_kernel_awq_allreduce.py tests/test_fused_forward.py > "$OUT/awq-tests-$t.log" 2>&1)
  echo "awq tests $t: exit $? $(tail -1 "$OUT/awq-tests-$t.log") ($(elapsed) s)"
  grep -E "^(FAILED|ERROR)" "$OUT/awq-tests-$t.log" | head -8
done
for t in "${SIDES[@]}" base; do
  [ "$(elapsed)" -lt 470 ] || break
  (cd "$(tree $t)" && PYTHONPATH=. timeout -k 5 60 python3 paper_figures/awq_fp16_probe.py --out "$OUT/probe-$t" \
      --ops o,qkv,down > "$OUT/probe-$t.log" 2>&1)
  echo "probe $t: exit $? ($(elapsed) s)"; grep -E "^\| (o|qkv|down) \| (1|8|16) " "$OUT/probe-$t.log" | cut -d'|' -f2-7
done
exit 0  # each step printed its own exit status above
