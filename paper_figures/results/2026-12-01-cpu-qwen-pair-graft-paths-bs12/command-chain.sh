#!/usr/bin/env bash
# Added in session 31 (2026-12-02): chain rows for this replay source, so a replayed run at its
# settings (--tree-bs 12 --tree-w 8 --chain-k 7 --graft ngram) can take chain too (session31/s4's
# run refused chain: none recorded here). The same pair, prompts and settings as command.sh (fp32
# on this 2-core CPU; latencies are not speed results); chain does not graft (its rows: graft off).
# Then chain's tokens against ar's as agreement.md's (the union with 2026-11-30-cpu-qwen-pair-graft),
# appended to agreement.md.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12}
python3 -m swiftspec_bench.cli run --target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 1 \
    --max-new-tokens 64 --chain-k 7 --tree-w 8 --tree-bs 12 --graft ngram --device cpu --dtype float32 \
    --data-dir ${DATA_DIR:-../shared/datasets/eagle} --out $OUT --systems chain >> $OUT/run.log 2>&1 || exit 2
U=$(mktemp -d)
PYTHONPATH=. python3 paper_figures/replay_union.py $U $OUT paper_figures/results/2026-11-30-cpu-qwen-pair-graft > /dev/null
LOSSLESS=$(python3 -m swiftspec_bench.cli compare $U --format markdown | tail -1)
python3 - $OUT "$LOSSLESS" >> $OUT/agreement.md <<'PY'
import sys
import pandas as pd
from swiftspec_bench.compare import mean_accepted
rows = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
chain = rows[rows["system"] == "chain"]
print(f"\nchain (command-chain.sh, session 31), compare on the union again: {sys.argv[2]}\n")
print("| system | queries | tokens a round |\n|---|---|---|")
print(f"| chain | {len(chain)} | {mean_accepted(chain):.2f} |")
PY
