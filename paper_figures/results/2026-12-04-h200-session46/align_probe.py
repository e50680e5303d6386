"""Session 46, call 6 (NOTES v263): the dynamic shared memory's base aligned to 128 bytes. Call 5's ncu
showed the code copies (LDGSTS) of awq_gemm at 2x their ideal shared-memory wavefronts and stream-K's
at 5x, with stream-K's L2 sectors at 2x the ideal (the same 4 lines a copy): both kernels' rings start
where their static shared memory ends (awq_gemm: 64 bytes, row_scale; stream-K: ~208), not on a
128-byte line. Here every kernel is also built with `extern __shared__ __align__(128)` (ptxas then
rounds the static part to 128 bytes: nothing else changes), selected by module name:
1. a tiny kernel with 64 bytes of static shared memory: its dynamic base mod 128 at align 16 / 128;
2. awq_gemm (plan()'s shapes: 70B qkv, o, down, gate_up through awq_swiglu), M = 8, fp16 and bf16 x:
   outputs bitwise equal, us a call (median of graph replays, PDL on, weight copies rotated, as the
   kernel table), three alternating rounds;
3. the stream-K kernel (session45/streamk.patch, applied by command-6.sh on the device's copy only)
   on o and down at 128 x 16 (awq_gemm (16, 1)'s split) and at its own 132 x 20, bf16 x.
Random INT4 weights and x (labelled).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session46/align_probe.py
"""
import statistics

import torch

import swiftspec_core.kernels.awq_gemm as awq
from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_bench.kernel_shapes import awq_gemm_bytes
from swiftspec_core.kernels import build
from swiftspec_core.runtime.floor import copy_bandwidth

M, ROUNDS, SUFFIX = 8, 3, "_a128"
PLAIN, ALIGNED = ("extern __shared__ __align__(16) unsigned char smem[];",
                  "extern __shared__ __align__(128) unsigned char smem[];")
SHAPES = {"qkv": (10240, 8192, "awq_gemm"), "o": (8192, 8192, "awq_gemm"), "down": (8192, 28672, "awq_gemm"),
          "gate_up": (57344, 8192, "awq_swiglu")}  # Llama-3-70B
_plain_source = build.source


def source(name: str) -> str:
    """cuda/NAME.cu, or for NAME + SUFFIX the same with the dynamic shared memory aligned to 128 bytes."""
    if not name.endswith(SUFFIX):
        return _plain_source(name)
    text = _plain_source(name[:-len(SUFFIX)])
    assert text.count(PLAIN) >= 1, name
    return text.replace(PLAIN, ALIGNED)


build.source = source
variant = [""]  # the module suffix the library's launches take now
_launch = awq.launch
awq.launch = lambda name, *a, **k: _launch(name + variant[0], *a, **k)

BASE = r"""
extern "C" __global__ void base(unsigned* out) {
  __shared__ float row_scale[16];
  extern __shared__ __align__(ALIGN) unsigned char smem[];
  row_scale[threadIdx.x % 16] = 0.f;
  unsigned s;
  asm volatile("{ .reg .u64 p; cvta.to.shared.u64 p, %1; cvt.u32.u64 %0, p; }" : "=r"(s) : "l"(smem));
  if (threadIdx.x == 0) out[0] = s, out[1] = (unsigned)(size_t)&row_scale[0];
}
"""


def cell(t: list[float]) -> str:
    return f"{statistics.median(t):.2f} [{', '.join(f'{v:.2f}' for v in t)}]"


def main() -> None:
    dev = torch.device("cuda")
    sms, bandwidth = awq._sm_count(dev.index), copy_bandwidth()
    print(f"# {torch.cuda.get_device_name()}, {sms} SMs, copy bandwidth {bandwidth / 1e12:.2f} TB/s; M = {M}; random "
          f"INT4 weights and x; us a call, median of {ROUNDS} alternating rounds (each in brackets)\n")
    for align in (16, 128):
        fn = build.compile_source(BASE.replace("ALIGN", str(align))).get_function("base")
        got = torch.zeros(2, dtype=torch.int32, device=dev)
        build.launch_ex(fn.kernel.ptr, (1,), (32,), (build.ptr(got),), 1024, torch.cuda.current_stream().cuda_stream, False)
        torch.cuda.synchronize()
        print(f"align {align}: dynamic shared base {int(got[0]) & 0xFFFFFFFF:#x} (mod 128: "
              f"{(int(got[0]) & 0xFFFFFFFF) % 128}), static at {int(got[1]) & 0xFFFFFFFF:#x}")

    print("\n## awq_gemm at plan()'s shapes: align 16 (as built) against 128\n")
    print("| op | x | (S, C) | floor us | align 16 | align 128 | outputs equal |")
    print("|---|---|---|---|---|---|---|")
    for op, (n, k, kind) in SHAPES.items():
        ws, copies = awq_weights(n, k)
        floor = awq_gemm_bytes(n, k, M) / bandwidth * 1e6
        for dtype in (torch.float16, torch.bfloat16):
            x = torch.randn(M, k, device=dev).to(dtype)
            fn = awq.awq_swiglu if kind == "awq_swiglu" else awq.awq_gemm
            cols, odt = (n // 2, dtype) if kind == "awq_swiglu" else (n, torch.bfloat16)
            out = torch.empty(M, cols, device=dev, dtype=odt)
            outs = []
            for v in ("", SUFFIX):
                variant[0] = v
                res = torch.full_like(out, float("nan"))
                fn(x, ws[0], out=res)
                torch.cuda.synchronize()
                outs.append(res)
            same = torch.equal(outs[0], outs[1]) and not outs[0].isnan().any()
            times = {"": [], SUFFIX: []}
            for _ in range(ROUNDS):
                for v in times:
                    variant[0] = v
                    times[v].append(time_calls(lambda i: fn(x, ws[i % copies], out=out), max(CALLS, copies)))  # noqa: B023
            variant[0] = ""
            print(f"| {op} | {str(dtype)[6:]} | {awq.plan(n, k, 128, sms)} | {floor:.2f} | {cell(times[''])} | "
                  f"{cell(times[SUFFIX])} | {same} |", flush=True)
        ws = None
        torch.cuda.empty_cache()

    if not hasattr(awq, "launch_streamk"):
        print("\n(no stream-K kernel in this tree: session45/streamk.patch not applied)")
        return
    print("\n## Stream-K (bf16 x): align 16 against 128, beside awq_gemm at (16, 1)\n")
    print("| op | awq_gemm (16, 1) | stream-K 128 x 16, 16 | 128 x 16, 128 | 132 x 20, 16 | 132 x 20, 128 | equal |")
    print("|---|---|---|---|---|---|---|")
    for op in ("o", "down"):
        n, k, _ = SHAPES[op]
        ws, copies = awq_weights(n, k)
        x = torch.randn(M, k, device=dev).to(torch.bfloat16)
        out = torch.empty(M, n, device=dev, dtype=torch.bfloat16)
        checks = []
        for v in ("", SUFFIX):
            variant[0] = v
            res = torch.full_like(out, float("nan"))
            awq.launch_streamk(x, ws[0], None, res)
            torch.cuda.synchronize()
            checks.append(res)
        same = torch.equal(checks[0], checks[1]) and not checks[0].isnan().any()
        runs = {"gemm": ("", lambda i: awq.launch_shape(x, ws[i % copies], None, out, 16, 1))}
        for blocks, splits in ((128, 16), (132, 20)):
            for v in ("", SUFFIX):
                runs[f"{blocks}x{splits}{v}"] = (v, lambda i, b=blocks, s=splits: awq.launch_streamk(
                    x, ws[i % copies], None, out, blocks=b, splits=s))
        times = {key: [] for key in runs}
        for _ in range(ROUNDS):
            for key, (v, run) in runs.items():
                variant[0] = v
                times[key].append(time_calls(run, max(CALLS, copies)))
        variant[0] = ""
        print(f"| {op} | " + " | ".join(cell(t) for t in times.values()) + f" | {same} |", flush=True)
        ws = None
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
