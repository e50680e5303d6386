#!/usr/bin/env bash
# Session 41, call 3 (nvidia-h200, no carry), run from the repo root as
#   SWIFTSPEC_COMMIT=<commit> bash paper_figures/results/2026-12-03-h200-session41/command-3.sh
# (NOTES v241). The tests of this session's CPU work, under the GPU machine's package versions
# (torch 2.11, transformers 5.17, typer there; the CI machine has others): .bin checkpoints mapped by
# torch.load, compare / plot, a user's prompts and flags, Ctrl-C in the imports and under --split.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
O=$OUT/c3; mkdir -p $O
{ echo "commit $SWIFTSPEC_COMMIT, $(date -u +%FT%TZ)"; python3 -c 'import torch, transformers, typer, click, pandas, pyarrow
print("torch", torch.__version__, "transformers", transformers.__version__, "typer", typer.__version__, "click", click.__version__,
      "pandas", pandas.__version__, "pyarrow", pyarrow.__version__)'; } > $O/env.log 2>&1; cat $O/env.log
{ echo "# nvidia-h200, commit $SWIFTSPEC_COMMIT"
  time timeout -k 5 330 python3 -m pytest -q -p no:cacheprovider tests/test_checkpoint_checks.py tests/test_bench_compare.py \
      tests/test_bench_inputs.py tests/test_bench_faults.py tests/test_bench_run.py -k "not hf"; } > $O/cpu-tests-$SWIFTSPEC_COMMIT.log 2>&1
grep -E "passed|failed|^FAILED" $O/cpu-tests-$SWIFTSPEC_COMMIT.log | tail -8
cd "$OUT" && tar czf c3.tgz c3 && rm -rf c3
