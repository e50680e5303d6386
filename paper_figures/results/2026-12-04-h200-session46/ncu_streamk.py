"""Session 46, call 5 (NOTES v262): one kernel of the same split called back to back, for ncu to pick
a launch: awq_gemm at (16, 1), or session 45's stream-K kernel on 128 blocks of 16 warps (the same
work to the unit: each block one tile, each warp 4 (o) contiguous groups of it). Needs
session45/streamk.patch applied (command-5.sh applies it on the device's copy).

    PYTHONPATH=. ncu --kernel-name regex:awq_ --launch-skip 3 --launch-count 1 ... \
        python3 paper_figures/results/2026-12-04-h200-session46/ncu_streamk.py gemm|streamk [N K]

M = 8, bf16 x; random INT4 weights (kernel_ops.random_awq)."""
import sys

import torch

from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import launch_shape, launch_streamk

kind = sys.argv[1]
n, k = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (8192, 8192)
w = random_awq(n, k)
x = torch.randn(8, k, device="cuda", dtype=torch.bfloat16)
out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)
for _ in range(6):
    if kind == "gemm":
        launch_shape(x, w, None, out, 16, 1)
    else:
        launch_streamk(x, w, None, out, blocks=128, splits=16)
torch.cuda.synchronize()
print("ok", kind, tuple(out.shape))
