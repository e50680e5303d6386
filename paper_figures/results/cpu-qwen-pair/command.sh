#!/usr/bin/env bash
# The real Qwen2.5-Coder 0.5B -> 1.5B pair, fp32 on 2 CPU cores: 2 prompts of each dataset, 64 new
# tokens. Two invocations into one folder: swiftspec with d = 2 and d = 3 (a fixed d is in its label).
set -euo pipefail
OUT=paper_figures/results/cpu-qwen-pair
COMMON="--target qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b --datasets all --limit 2 --max-new-tokens 64
        --chain-k 7 --tree-bs 8 --tree-w 8 --device cpu --dtype float32 --data-dir ../shared/datasets/eagle --out $OUT"
swiftspec-bench run $COMMON --systems ar,hf-ar,hf-assisted,chain,tree,swiftspec --draft-steps 2
swiftspec-bench run $COMMON --systems swiftspec --draft-steps 3
swiftspec-bench compare $OUT --format markdown > $OUT/compare.md || true  # exit 1 lists divergences
swiftspec-bench plot $OUT --out $OUT/figures
