#!/usr/bin/env bash
# The real Qwen2.5-Coder 1.5B / 0.5B pair, fp32 on this 2-core CPU (latencies are not speed results),
# recorded with each sent tree's best-path length (sent_paths) as results/2026-12-01-cpu-qwen-pair-graft-paths
# is, but verifying trees of bs nodes = 16 (then 12): the replay source for end-to-end runs at those
# budgets (a replay takes only rows of its own --tree-bs). Why (NOTES v102): the fused GEMMs compute
# 16 rows whatever M is, so a verification of 16 nodes costs the 8B forward about the attention's
# extra (~+0.1 ms, ~3%), while the CPU recordings of the fourteenth session accepted 4.13 tokens a round
# at bs 16 and 4.01 at 12 against 3.49 at 8 (d = 3, 7 queries, grafting, without sent_paths).
# 6 datasets x 1 prompt + mt_bench's second turn (7 queries), 64 tokens, w 8, grafting: swiftspec
# lockstep at d = 3 and 4, then tree; the same at bs 12 into the -bs12 folder (BS=12).
set -u
BS=${BS:-16}
OUT=${1:-paper_figures/results/2026-12-01-cpu-qwen-pair-graft-paths-bs$BS}
mkdir -p $OUT
COMMON=(--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 1 --max-new-tokens 64
        --chain-k 7 --tree-w 8 --tree-bs $BS --graft ngram --device cpu --dtype float32
        --data-dir ${DATA_DIR:-../shared/datasets/eagle} --out $OUT)
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps 3 >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems tree >> $OUT/run.log 2>&1 || exit 2
python3 -m swiftspec_bench.cli run "${COMMON[@]}" --systems swiftspec --draft-steps 4 >> $OUT/run.log 2>&1 || exit 2
# Then the second prompt of each dataset too (bs 16 only; the folder resumed), as the bs 8 folder has for d = 3 and tree.
if [ "${MORE:-1}" = 1 ] && [ "$BS" = 16 ]; then
  for s in "swiftspec --draft-steps 3" "tree" "swiftspec --draft-steps 4"; do
    python3 -m swiftspec_bench.cli run "${COMMON[@]}" --limit 2 --systems $s >> $OUT/run.log 2>&1 || exit 2
  done
fi
# agreement.md: as the bs 8 folder's (compare on a union with results/2026-11-30-cpu-qwen-pair-graft's ar
# rows: lossless over every row; then each system's tokens a round and mean best path).
U=$(mktemp -d)
PYTHONPATH=. python3 paper_figures/replay_union.py $U $OUT paper_figures/results/2026-11-30-cpu-qwen-pair-graft > /dev/null
LOSSLESS=$(python3 -m swiftspec_bench.cli compare $U --format markdown | tail -1)
python3 - $OUT "$LOSSLESS" $BS > $OUT/agreement.md <<'PY'
import sys
import pandas as pd
from swiftspec_bench.compare import mean_accepted
rows = pd.read_parquet(f"{sys.argv[1]}/results.parquet")
print(f"# bs {sys.argv[3]}: every system's tokens against ar's (results/2026-11-30-cpu-qwen-pair-graft, the same prompts)\n")
print(f"compare on the union of the two folders: {sys.argv[2]}\n")
print("| system | queries | tokens a round | best path, nodes |\n|---|---|---|---|")
for (system, d), g in rows.groupby(["system", "draft_steps"], sort=False):
    paths = [p for ps in g["sent_paths"] for p in ps]
    print(f"| {system}{f' d = {d}' if d else ''} | {len(g)} | {mean_accepted(g):.2f} | {sum(paths) / len(paths):.2f} |")
PY
