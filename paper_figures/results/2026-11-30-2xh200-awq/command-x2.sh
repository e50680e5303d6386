#!/usr/bin/env bash
# Issue 11's pair on nvidia-h200-x2 (lent again at 12:06 UTC; 400 s of device time left): the run
# steps of command.sh at one prompt a dataset (7 queries), the tiled AWQ GEMM: swiftspec@1+1 with
# grafting (70B AWQ target on GPU 0, 3B bf16 draft on GPU 1, d measured by the workers), then ar on
# the 70B AWQ engine, then tree@tp2 if the deadline allows. Acceptance replayed from the grafting
# folder's swiftspec rows (d = 2, 3 with and without grafting: the nearest recorded d is used) and
# cpu-qwen-pair's. Everything is tarred into all.tgz.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SWIFTSPEC_COMMIT=${SWIFTSPEC_COMMIT:?export the commit}
python3 -m pip install -q --no-deps -e . > /dev/null 2>&1
G=paper_figures/results/2026-11-30-cpu-qwen-pair-graft
PYTHONPATH=. python3 paper_figures/replay_union.py /tmp/replay-source $G paper_figures/results/cpu-qwen-pair > $OUT/replay.log
TARGET=llama-3-70b DRAFT=llama-3.2-3b EXTRA="--quant awq" REPLAY=/tmp/replay-source \
    bash paper_figures/run_2xh200.sh $OUT/run ${DEADLINE_S:-250} "1 --systems swiftspec --split 1+1 --graft ngram" \
    "1 --systems ar" "1 --systems tree --tp 2" > $OUT/run.log 2>&1
python3 -m swiftspec_bench.cli compare $OUT/run --format markdown > $OUT/run/compare.md 2>&1
grep -E "^==|skipped|error" $OUT/run.log | head; grep -E "overall|lossless" $OUT/run/compare.md | cut -d'|' -f5-8,12-
tar czf /tmp/all.tgz -C $OUT . && rm -rf $OUT/* && mv /tmp/all.tgz $OUT/
# Run: export SWIFTSPEC_COMMIT=fa225a7 && bash paper_figures/results/2026-11-30-2xh200-awq/command-x2.sh
# (12:04 UTC, nvidia-h200-x2), outputs unpacked in x2/.
