"""One AWQ GEMM shape called back to back, for a profiler (ncu) to pick one launch:

    PYTHONPATH=. ncu --kernel-name regex:awq_ --launch-skip 3 --launch-count 1 ... \
        python3 paper_figures/profile_awq.py N K [M] [plan | s16 | chain]

Random codes, zeros and scales in the tiled layout the engine holds (kernel_ops.random_awq). How:
plan, awq_gemm at plan()'s shape (the default); s16, its launch at 16 warps a tile in one block
(launch_shape(S = 16, C = 1)); chain, the persistent chain's kernel as one phase
(kernels/awq_chain.py at its default build: 16 warps), to set the two 16-warp kernels side by
side (NOTES v208)."""
import sys

import torch

from swiftspec_bench.kernel_ops import random_awq
from swiftspec_core.kernels.awq_chain import AWQChain, Phase
from swiftspec_core.kernels.awq_gemm import awq_gemm, launch_shape

n, k = int(sys.argv[1]), int(sys.argv[2])
m = int(sys.argv[3]) if len(sys.argv) > 3 else 8
how = sys.argv[4] if len(sys.argv) > 4 else "plan"
if how not in ("plan", "s16", "chain"):
    sys.exit(f"error: how is plan, s16 or chain, not {how!r}")
w = random_awq(n, k)
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
chain = AWQChain([Phase(x, w, out)]) if how == "chain" else None
for _ in range(6):
    if how == "plan":
        awq_gemm(x, w, out=out)
    elif how == "s16":
        launch_shape(x, w, None, out, 16, 1)
    else:
        chain()
torch.cuda.synchronize()
print("ok", how, tuple(out.shape))
