"""Session 45, call 4 (NOTES v255): is it the order of a warp's groups? awq_gemm (plan()'s shape) as
built, where warp s of a tile sums groups s, s + S, s + 2S, .. (a block's warps read consecutive
4 KB groups at once), against the same kernel rebuilt so that warp s sums a contiguous run of
groups [s G / S, (s + 1) G / S) (as each stream-K warp does), and the stream-K kernel; M = 8, us a
call, median of graph replays, PDL on, weight copies past twice the L2. Random INT4 weights.

It ran with the stream-K kernel, reverted after this session: on main, `git apply
paper_figures/results/2026-12-04-h200-session45/streamk.patch` first (NOTES v252-v257).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session45/contiguous_probe.py
"""
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import (kernel_args, kernel_name, launch_shape, launch_streamk, plan,
                                             warp_shared_bytes)

EDITS = (  # strided -> contiguous runs of groups a warp (awq_gemm_block.cuh)
    ("const int mine = split < groups ? (groups - 1 - split) / all_splits + 1 : 0;",
     "const int first_group = split * groups / all_splits;\n"
     "  const int mine = (split + 1) * groups / all_splits - first_group;"),
    ("const size_t group_stride = (size_t)all_splits * kChunks * 1024;", "const size_t group_stride = (size_t)kChunks * 1024;"),
    ("(size_t)split * kChunks * 1024 + c.copy_src;", "(size_t)first_group * kChunks * 1024 + c.copy_src;"),
    ("((size_t)tile * groups + split) * meta_group_bytes;", "((size_t)tile * groups + first_group) * meta_group_bytes;"),
    ("meta_next += all_splits * meta_group_bytes;", "meta_next += meta_group_bytes;"),
    ("x_bytes + c.x_row + (size_t)split * kChunks * 64;", "x_bytes + c.x_row + (size_t)first_group * kChunks * 64;"),
    ("const size_t x_group_step = (size_t)(all_splits - 1) * kChunks * 64 + 64;", "const size_t x_group_step = 64;"),
    ("const unsigned group = split + i * all_splits;", "const unsigned group = first_group + i;"),
)
code = build.source("awq_gemm")
for old, new in EDITS:
    assert code.count(old) == 1, old
    code = code.replace(old, new)
contiguous = build.compile_source(code)
SHAPES = {"o": (8192, 8192, False), "down": (8192, 28672, False), "qkv": (10240, 8192, False),
          "gate_up": (57344, 8192, True)}
SMS, M = 132, 8


def contiguous_call(x, w, out, splits, swiglu):
    fn = contiguous.get_function(kernel_name(M, 128, 1, "awq_swiglu" if swiglu else "awq_gemm"))
    pair = 2 if swiglu else 1
    shared = pair * splits * warp_shared_bytes(M)
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, shared)
    args = kernel_args(x, w, None, out)
    return lambda: build.launch_ex(fn.kernel.ptr, (w.qweight.shape[0] // pair,), (32 * splits * pair,), args, shared,
                                   torch.cuda.current_stream().cuda_stream, True)


print(f"# {torch.cuda.get_device_name()}, M = {M}, bf16 x, random INT4 weights; us a call")
print("| shape | plan (S, C) | strided (as built) | contiguous runs | stream-K |")
print("|---|---|---|---|---|")
for name, (n, k, swiglu) in SHAPES.items():
    ws, copies = awq_weights(n, k)
    x = torch.randn(M, k, device="cuda").to(torch.bfloat16)
    out = torch.empty(M, n // 2 if swiglu else n, device="cuda", dtype=torch.bfloat16)
    op = "awq_swiglu" if swiglu else "awq_gemm"
    s, c = plan(n, k, 128, SMS)
    calls = [contiguous_call(x, w, out, s, swiglu) for w in ws]
    runs = (lambda i: launch_shape(x, ws[i % copies], None, out, s, 1, op=op),  # noqa: E731
            lambda i: calls[i % copies](),  # noqa: E731
            lambda i: launch_streamk(x, ws[i % copies], None, out, op=op))  # noqa: E731
    t = [time_calls(f, max(CALLS, copies)) for f in runs]
    print(f"| {name} | ({s}, {c}) | {t[0]:.2f} | {t[1]:.2f} | {t[2]:.2f} |", flush=True)
    del ws, calls
    torch.cuda.empty_cache()
