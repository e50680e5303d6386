#!/usr/bin/env bash
# The real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this 2-core CPU (latencies are not speed results),
# recorded with each sent tree's best-path length (sent_paths; NOTES v85), from which a replay takes
# its acceptance rate a node: 6 datasets x 1 prompt + mt_bench's second turn (7 queries), 64
# tokens, bs 8, w 8, grafting (the settings of results/2026-11-30-cpu-qwen-pair-graft): swiftspec
# lockstep at d = 3, then tree.
set -u
OUT=${1:-paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths}
COMMON=(--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 1 --max-new-tokens 64
        --chain-k 7 --tree-w 8 --tree-bs 8 --graft ngram --device cpu --dtype float32
        --data-dir ${DATA_DIR:-../shared/datasets/eagle} --out $OUT)
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps 3 >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree >> $OUT/run.log 2>&1 || exit 2
# Then, as a replay source for the GPU runs (same folder, resumed; the second prompt of each
# dataset for d = 3 and tree, as the older graft folder has, and d = 4 and 6 on the first prompts):
if [ "${MORE:-1}" = 1 ]; then
  python3 -m swiftspec_bench.cli run "${COMMON[@]}" --limit 2 --systems swiftspec --draft-steps 3 >> $OUT/run.log 2>&1 || exit 2
  python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps 4 >> $OUT/run.log 2>&1 || exit 2
  python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps 6 >> $OUT/run.log 2>&1 || exit 2
  python3 -m swiftspec_bench.cli run "${COMMON[@]}" --limit 2 --systems tree >> $OUT/run.log 2>&1 || exit 2
fi
# Fifteenth session: the other draft depths a fused draft may reach (d = 5, 7 for the 70B / 3B
# pair's d near 6; then 2 and 8), the first prompts, so that no GPU replay at d = 2..8 draws lengths.
if [ "${MORE2:-1}" = 1 ]; then
  for d in 5 7 2 8; do
    python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps $d >> $OUT/run.log 2>&1 || exit 2
  done
fi
# Fidelity (fidelity.md, computed on the first 7 + 7 rows, before the MORE runs above were added):
# the recorded rows' own best paths and lengths (5 datasets, sum's prompt is
# past tiny-llama's context), then each system replayed from these rows at tiny-llama shapes (the
# same 5 first prompts, 64 tokens) with the rates (this folder as it is) and with drawn lengths (the
# same rows without sent_paths), counted by paper_figures/tree_shapes.py:
#   PYTHONPATH=. python3 paper_figures/tree_shapes.py "replayed swiftspec (rates)" run --target tiny-llama \
#       --draft tiny-llama --weights random --device cpu --dtype float32 --acceptance replay:DIR \
#       --datasets gsm8k,qa,humaneval,mt_bench,alpaca --limit 1 --max-new-tokens 64 --tree-bs 8 --tree-w 8 \
#       --data-dir .data/eagle --graft ngram --systems swiftspec --draft-steps 3 --out $(mktemp -d)
# (and --systems tree without --draft-steps; DIR a copy of results.parquet, sent_paths dropped for "drawn").
# agreement.md: each system's tokens against ar's rows in results/2026-11-30-cpu-qwen-pair-graft
# (the same prompts and settings; this folder has no ar), through compare on a union of the two
# (its lossless check holds every row against ar's on the same prompt), then its tokens a round
# (compare's mean accepted) and mean best path: AGREEMENT=1 MORE=0 MORE2=0 bash command.sh, or
#   U=$(mktemp -d); PYTHONPATH=. python3 paper_figures/replay_union.py $U $OUT paper_figures/results/2026-11-30-cpu-qwen-pair-graft
#   python3 -m swiftspec_bench.cli compare $U --format markdown | tail -1     # lossless: yes
#   python3 - $OUT <<'PY' > $OUT/agreement.md   (the table below it)
if [ "${AGREEMENT:-0}" = 1 ]; then
  U=$(mktemp -d)
  PYTHONPATH=. python3 paper_figures/replay_union.py $U $OUT paper_figures/results/2026-11-30-cpu-qwen-pair-graft > /dev/null
  LOSSLESS=$(python3 -m swiftspec_bench.cli compare $U --format markdown | tail -1)
  python3 - $OUT "$LOSSLESS" > $OUT/agreement.md <<'PY'
import sys
import pandas as pd
from swiftspec_bench.compare import mean_accepted
rows = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
print("# Every system's tokens against ar's (results/2026-11-30-cpu-qwen-pair-graft, the same settings and prompts)\n")
print(f"compare on the union of the two folders: {sys.argv[2]}\n")
print("tokens a round: compare's mean accepted (every emitted token over the rows' rounds); best path: the mean")
print("of sent_paths, the nodes of each sent tree's best path, root included.\n")
print("| system | queries | tokens a round | best path, nodes |\n|---|---|---|---|")
for system, g in rows.groupby("system", sort=False):
    paths = [p for ps in g["sent_paths"] for p in ps]
    print(f"| {system} | {len(g)} | {mean_accepted(g):.2f} | {sum(paths) / len(paths):.2f} |")
PY
fi
