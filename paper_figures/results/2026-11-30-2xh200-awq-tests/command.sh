#!/usr/bin/env bash
# Issue 11: the AWQ GPU tests, first run (device tool, nvidia-h200-x2, 2026-11-30 10:12 UTC, commit
# c6be938, main with wt-awq merged): 77 passed, 1 failed. Every dequantizing-GEMM test passed
# (against its reference with poisoned output on the 70B/8B/1B/Qwen layer shapes, bitwise row
# invariance, graph replay, a fused AWQ engine whose decoders equal fused ar). The failure was not
# AWQ's: a CLI test on tiny-llama (head_dim 16) took --kernels auto to fused on the GPU; auto now
# takes fused only for shapes the kernels take (swiftspec_bench/kernel_choice.py).
timeout -k 5 200 python3 -m pytest -q -rA -s -p no:cacheprovider tests/test_kernel_awq_gemm.py tests/test_awq.py
