"""One AWQ GEMM shape called back to back, for a profiler (ncu) to pick one launch:

    PYTHONPATH=. ncu --kernel-name regex:awq_gemm --launch-skip 3 --launch-count 1 ... \
        python3 paper_figures/profile_awq.py N K [M]

Random codes, zeros and scales in the tiled layout the engine holds (kernel_ops.random_awq)."""
import sys

import torch

from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_gemm import awq_gemm

n, k = int(sys.argv[1]), int(sys.argv[2])
m = int(sys.argv[3]) if len(sys.argv) > 3 else 8
w = random_awq(n, k)
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
for _ in range(6):
    awq_gemm(x, w, out=out)
torch.cuda.synchronize()
print("ok", tuple(out.shape))
