#!/usr/bin/env bash
# The GPU tests of one device call, a test file a pytest (a file's time-out or crash keeps every other
# file's result), within a deadline. The whole suite in one pytest does not fit a call on one H200
# (NOTES v267: 23% in ~480 s); file by file, ~940 tests ran in two calls (v268, v269).
#
#   SWIFTSPEC_COMMIT=<hash> bash paper_figures/gpu_test_files.sh OUT [DEADLINE_S] [tests/test_x.py ...]
#
# Without files: every tests/test_*.py that names cuda (its GPU tests among them; a few CPU-only
# files come along), test_gpu.py first.
# OUT gets a log a file and summary.md (file, pytest's last line, exit status, seconds); a file not
# started for want of time says so there.
set -uo pipefail
OUT=${1:?usage: gpu_test_files.sh OUT [DEADLINE_S] [FILE ...]}
DEADLINE=$(( $(date +%s) + ${2:-540} ))
shift $(( $# < 2 ? $# : 2 ))
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
FILES=("$@")
if [ ${#FILES[@]} = 0 ]; then
  mapfile -t FILES < <(echo tests/test_gpu.py; grep -l cuda tests/test_*.py | grep -v "^tests/test_gpu.py$")
fi
mkdir -p "$OUT"
{ echo "commit ${SWIFTSPEC_COMMIT:-unknown}, $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; } > "$OUT/env.log" 2>&1
{ echo "| file | result | exit | s |"; echo "|---|---|---|---|"; } > "$OUT/summary.md"
for f in "${FILES[@]}"; do
  name=$(basename "$f" .py); left=$(( DEADLINE - $(date +%s) ))
  if (( left < 40 )); then echo "| $name | not started (deadline) | | |" >> "$OUT/summary.md"; continue; fi
  start=$(date +%s)
  timeout -k 5 "$left" python3 -m pytest -q -rfE --tb=short --durations=5 -p no:cacheprovider "$f" > "$OUT/$name.log" 2>&1
  status=$?
  echo "| $name | $(grep -E '(passed|failed|error|skipped)' "$OUT/$name.log" | tail -1 | tr -d '=|') | $status | $(( $(date +%s) - start )) |" \
      >> "$OUT/summary.md"
done
cat "$OUT/summary.md"
grep -hE "^(FAILED|ERROR)" "$OUT"/*.log | head -20
