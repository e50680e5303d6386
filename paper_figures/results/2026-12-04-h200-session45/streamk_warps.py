"""Session 45, call 3 (NOTES v254): the stream-K AWQ GEMM at 20 warps a block (the kernels as built:
96 registers) and at 24 (awq_streamk.cu rebuilt with AWQ_STREAMK_THREADS 768: 80 registers, its M > 8
kernels spill, so M = 8 only) beside plan()'s launch, on the 70B's shapes; us a call, median of
graph replays, PDL on, weight copies past twice the L2 (as awq_streamk_probe.py). Random INT4
weights and x.

It ran with the stream-K kernel, reverted after this session: on main, `git apply
paper_figures/results/2026-12-04-h200-session45/streamk.patch` first (NOTES v252-v257).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session45/streamk_warps.py
"""
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_bench.kernel_shapes import awq_gemm_bytes
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import (kernel_args, launch_shape, launch_streamk, plan, run_planned,
                                             streamk_buffers, streamk_shared_bytes, streamk_slots)
from swiftspec_core.runtime.floor import copy_bandwidth

SHAPES = {"qkv": (10240, 8192, False), "o": (8192, 8192, False), "gate_up": (57344, 8192, True),
          "down": (8192, 28672, False), "tp2-qkv": (5120, 8192, False), "tp2-gate_up": (28672, 8192, True)}
SMS, M = 132, 8

code = build.source("awq_streamk")
assert code.count("#define AWQ_STREAMK_THREADS 640") == 1
wide = build.compile_source(code.replace("#define AWQ_STREAMK_THREADS 640", "#define AWQ_STREAMK_THREADS 768"))


def wide_call(x, w, out, swiglu):
    name = f"awq_streamk_{'swiglu' if swiglu else 'gemm'}{'_f16' if x.dtype == torch.float16 else ''}_r8_g128"
    fn = wide.get_function(name)
    slots = streamk_slots(w.n, x.shape[1], 128, SMS, 24, swiglu)
    shared = streamk_shared_bytes(M, 24, slots)
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, shared)
    partials, flags = streamk_buffers(x.device)
    args = kernel_args(x, w, None, out) + (build.ptr(partials), build.ptr(flags))
    return lambda: build.launch_ex(fn.kernel.ptr, (SMS,), (32 * 24,), args, shared,
                                   torch.cuda.current_stream().cuda_stream, True)


bandwidth = copy_bandwidth()
print(f"# {torch.cuda.get_device_name()}, copy bandwidth {bandwidth / 1e9:.0f} GB/s, M = {M}, random INT4 weights")
print("| shape | x | plan (S, C) | plan us | SK 20 warps us | SK 24 warps us | floor us |")
print("|---|---|---|---|---|---|---|")
for name, (n, k, swiglu) in SHAPES.items():
    ws, copies = awq_weights(n, k)
    floor = awq_gemm_bytes(n, k, M) / bandwidth * 1e6
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.randn(M, k, device="cuda").to(dtype)
        out = torch.empty(M, n // 2 if swiglu else n, device="cuda", dtype=torch.bfloat16)
        op = "awq_swiglu" if swiglu else "awq_gemm"
        s, c = plan(n, k, 128, SMS)
        if swiglu:
            planned = lambda i: launch_shape(x, ws[i % copies], None, out, s, c, op=op)  # noqa: E731
        else:
            planned = lambda i: run_planned(x, ws[i % copies], None, out, streamk=False)  # noqa: E731
        sk20 = lambda i: launch_streamk(x, ws[i % copies], None, out, op=op)  # noqa: E731
        wides = [wide_call(x, w, out, swiglu) for w in ws]
        sk24 = lambda i: wides[i % copies]()  # noqa: E731
        calls = max(CALLS, copies)
        t = [time_calls(f, calls) for f in (planned, sk20, sk24)]
        print(f"| {name} | {str(dtype)[6:]} | ({s}, {c}) | {t[0]:.2f} | {t[1]:.2f} | {t[2]:.2f} | {floor:.2f} |", flush=True)
    del ws
    torch.cuda.empty_cache()
