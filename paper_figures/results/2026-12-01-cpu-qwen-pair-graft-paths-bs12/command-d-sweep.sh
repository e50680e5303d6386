#!/usr/bin/env bash
# Added in session 32 (2026-12-02): swiftspec at d = 2 and 5..8 for this replay source (it held d = 3
# and 4 only), so that a replayed run at bs 12 has a recording for whatever d the draft reaches on
# the GPUs (issue 10: "the real Qwen pair's acceptance recorded on CPU for swiftspec at d = 2..8";
# the bs 8 folder 2026-12-01-cpu-qwen-pair-graft-paths has them). The same pair, prompts and
# settings as command.sh (fp32 on this 2-core CPU; latencies are not speed results). Then compare
# on the union with 2026-11-30-cpu-qwen-pair-graft's ar rows again, appended to agreement.md.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs12}
COMMON=(--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 1 --max-new-tokens 64
        --chain-k 7 --tree-w 8 --tree-bs 12 --graft ngram --device cpu --dtype float32
        --data-dir ${DATA_DIR:-../shared/datasets/eagle} --out $OUT)
for d in 2 5 6 7 8; do
  python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps $d >> $OUT/run.log 2>&1 || exit 2
done
U=$(mktemp -d)
PYTHONPATH=. python3 paper_figures/replay_union.py $U $OUT paper_figures/results/2026-11-30-cpu-qwen-pair-graft > /dev/null
LOSSLESS=$(python3 -m swiftspec_bench.cli compare $U --format markdown | tail -1)
python3 - $OUT "$LOSSLESS" >> $OUT/agreement.md <<'PY'
import sys
import pandas as pd
from swiftspec_bench.compare import mean_accepted
rows = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
print(f"\nswiftspec at d = 2..8 (command-d-sweep.sh, session 32), compare on the union again: {sys.argv[2]}\n")
print("| system | queries | tokens a round | best path, nodes |\n|---|---|---|---|")
for (system, d), g in rows[rows["system"].str.startswith("swiftspec")].groupby(["system", "draft_steps"]):
    paths = [p for ps in g["sent_paths"] for p in ps]
    print(f"| {system} | {len(g)} | {mean_accepted(g):.2f} | {sum(paths) / len(paths):.2f} |")
PY
