"""Session 45, call 6 (NOTES v257): the stream-K kernel's registers? awq_gemm (16, 1) as built (80
registers: __launch_bounds__(768)) and rebuilt with __launch_bounds__(640, 1) (stream-K's: 96), the
stream-K kernel on 128 blocks of 16 warps (the same split) as built and rebuilt at 768 threads (80
registers). o and down of the 70B, M = 8, bf16 x, us a call, median of graph replays, PDL on.
Random INT4 weights.

It ran with the stream-K kernel, reverted after this session: on main, `git apply
paper_figures/results/2026-12-04-h200-session45/streamk.patch` first (NOTES v252-v257).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session45/bounds_probe.py
"""
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import (kernel_args, launch_shape, launch_streamk, streamk_buffers,
                                             warp_shared_bytes)

M, S = 8, 16
gemm = build.source("awq_gemm")
assert gemm.count("__launch_bounds__(AWQ_THREADS)") == 1
gemm96 = build.compile_source(gemm.replace("__launch_bounds__(AWQ_THREADS)", "__launch_bounds__(640, 1)"))
sk = build.source("awq_streamk")
assert sk.count("#define AWQ_STREAMK_THREADS 640") == 1
sk80 = build.compile_source(sk.replace("#define AWQ_STREAMK_THREADS 640", "#define AWQ_STREAMK_THREADS 768"))


def call(module, name, x, w, out, extra=()):
    fn = module.get_function(name)
    shared = S * warp_shared_bytes(M)
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, shared)
    args = kernel_args(x, w, None, out) + extra
    return lambda: build.launch_ex(fn.kernel.ptr, (128,), (32 * S,), args, shared,
                                   torch.cuda.current_stream().cuda_stream, True)


print(f"# {torch.cuda.get_device_name()}, M = {M}, bf16 x, 128 blocks of {S} warps, random INT4 weights; us a call")
print("| shape | awq_gemm 80 regs | awq_gemm 96 regs | stream-K 96 regs | stream-K 80 regs |")
print("|---|---|---|---|---|")
for name, (n, k) in {"o": (8192, 8192), "down": (8192, 28672)}.items():
    ws, copies = awq_weights(n, k)
    x = torch.randn(M, k, device="cuda").to(torch.bfloat16)
    out = torch.empty(M, n, device="cuda", dtype=torch.bfloat16)
    partials, flags = streamk_buffers(x.device)
    extra = (build.ptr(partials), build.ptr(flags))
    g96 = [call(gemm96, "awq_gemm_r8_g128_c1", x, w, out) for w in ws]
    s80 = [call(sk80, "awq_streamk_gemm_r8_g128", x, w, out, extra) for w in ws]
    runs = (lambda i: launch_shape(x, ws[i % copies], None, out, S, 1),  # noqa: E731
            lambda i: g96[i % copies](),  # noqa: E731
            lambda i: launch_streamk(x, ws[i % copies], None, out, blocks=128, splits=S),  # noqa: E731
            lambda i: s80[i % copies]())  # noqa: E731
    t = [time_calls(f, max(CALLS, copies)) for f in runs]
    print(f"| {name} | {t[0]:.2f} | {t[1]:.2f} | {t[2]:.2f} | {t[3]:.2f} |", flush=True)
    del ws, g96, s80
    torch.cuda.empty_cache()
