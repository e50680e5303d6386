#!/usr/bin/env bash
# Issue 10, third GPU call (nvidia-h200-x2, 2026-11-30 10:03 UTC, commit 9610adb): the second attention
# kernel's tests and the fused-engine tests (attention-tests.log: 56 passed), then its rows.
timeout -k 5 110 python3 -m pytest -q -rA -p no:cacheprovider tests/test_kernel_attention.py tests/test_gpu_fused.py
timeout -k 5 60 python3 -m swiftspec_bench.cli kernels --models llama-3-8b,llama-3.2-1b --tp 1 \
    --ops attention,forward,draft_step --impl ours --out $OUT/kernels
