#!/usr/bin/env bash
# Issue 10, first GPU call (device tool, nvidia-h200-x2, 2026-11-30 09:09 UTC, commit 35bfc05: the
# kernels as the helpers wrote them, never run before). gpu-tests.log: the kernel tests and the fused
# engine tests (DeprecationWarning lines about cupy.cuda.ExternalStream dropped); kernels.md/csv: the table.
export SWIFTSPEC_COMMIT=35bfc05
TESTS_S=270 BENCH_S=270 bash paper_figures/gpu_kernels.sh $OUT/call1 --models llama-3.2-1b,llama-3-8b,llama-3-70b
