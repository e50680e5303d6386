"""Session 45, call 5 (NOTES v256): is it the stream-K kernel or its split? awq_gemm at (16, 1) against
the stream-K kernel on 128 blocks of 16 warps, the same work to the unit: each block one tile,
each warp a contiguous run of 4 (o) or 14 (down) of its groups (no warp crosses a tile, no block
waits on another); and both at their own shapes (plan(): (22, 1) o, (19, 1) down; stream-K 132 x
20). M = 8, bf16 x, us a call, median of graph replays, PDL on. Random INT4 weights.

It ran with the stream-K kernel, reverted after this session: on main, `git apply
paper_figures/results/2026-12-04-h200-session45/streamk.patch` first (NOTES v252-v257).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session45/same_split_probe.py
"""
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_core.kernels.awq_gemm import launch_shape, launch_streamk, plan

SHAPES = {"o": (8192, 8192), "down": (8192, 28672)}
M = 8
print(f"# {torch.cuda.get_device_name()}, M = {M}, bf16 x, random INT4 weights; us a call")
print("| shape | plan() | awq_gemm (16, 1) | stream-K 128 x 16 | stream-K 132 x 20 |")
print("|---|---|---|---|---|")
for name, (n, k) in SHAPES.items():
    ws, copies = awq_weights(n, k)
    x = torch.randn(M, k, device="cuda").to(torch.bfloat16)
    out = torch.empty(M, n, device="cuda", dtype=torch.bfloat16)
    s, c = plan(n, k, 128, 132)
    runs = (lambda i: launch_shape(x, ws[i % copies], None, out, s, c),  # noqa: E731
            lambda i: launch_shape(x, ws[i % copies], None, out, 16, 1),  # noqa: E731
            lambda i: launch_streamk(x, ws[i % copies], None, out, blocks=128, splits=16),  # noqa: E731
            lambda i: launch_streamk(x, ws[i % copies], None, out))  # noqa: E731
    t = [time_calls(f, max(CALLS, copies)) for f in runs]
    print(f"| {name} | ({s}, {c}) {t[0]:.2f} | {t[1]:.2f} | {t[2]:.2f} | {t[3]:.2f} |", flush=True)
    del ws
    torch.cuda.empty_cache()
