"""Session 46, call 1 (NOTES v258): is the shared-memory configuration the driver picks for an AWQ
GEMM what paces it? v74 / v79 saw every 70B GEMM run 6-10% faster with 2 KB a warp less shared
memory, and the only counter that moved was the configuration (one step smaller); session 45's
stream-K kernel and session 33's chain, both slower per group on the same loop, ran at larger ones.
Never tested on one binary: here each kernel runs as built, at plan()'s shape, with the driver's
choice and with a preferred carveout (cudaFuncAttributePreferredSharedMemoryCarveout) asking for
each configuration from 100 to 228 KB (below what the blocks need, the driver takes what they need).

Also (the lead of session 45's c6): the build at __launch_bounds__(640, 1) (96 registers) on the
70B down at plan()'s 19 warps, against the build as it is (80).

The 70B's four layer GEMMs (gate_up through awq_swiglu), M = 8, fp16 x (the one-GPU forward's
operands) and bf16 x (the kernel table's o and qkv rows); us a call, median of graph replays of
calls cycling through weight copies, PDL on, as the kernel table times them; rounds alternate the
settings. Random INT4 weights and x (labelled).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session46/carveout_probe.py
"""
import statistics

import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_bench.kernel_shapes import awq_gemm_bytes
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import kernel_args, kernel_name, launch_shape, plan, warp_shared_bytes
from swiftspec_core.kernels.gemm import _sm_count
from swiftspec_core.runtime.floor import copy_bandwidth

M, GROUP, ROUNDS = 8, 128, 3
SHAPES = {"qkv": (10240, 8192, "awq_gemm"), "o": (8192, 8192, "awq_gemm"), "down": (8192, 28672, "awq_gemm"),
          "gate_up": (57344, 8192, "awq_swiglu")}  # Llama-3-70B, TP 1
CONFIGS = (None, 100, 132, 164, 196, 228)  # KB an SM asked for; None: the driver's choice
SM_SHARED_KB = 228


def prefer(fn, config_kb) -> None:
    """The carveout preference as a percent of SM_SHARED_KB, taken just below the configuration wanted
    (the driver rounds a percent up to the next configuration it supports; edge_probe.py)."""
    percent = -1 if config_kb is None else config_kb * 100 // SM_SHARED_KB
    build.set_function_attribute(fn.kernel.ptr, build.FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT, percent)


def main() -> None:
    dev = torch.device("cuda")
    sms, bandwidth = _sm_count(dev.index), copy_bandwidth()
    print(f"# {torch.cuda.get_device_name()}, {sms} SMs, copy bandwidth {bandwidth / 1e12:.2f} TB/s; M = {M}; "
          "random INT4 weights and x; us a call, median of graph replays (PDL on); "
          f"median over {ROUNDS} alternating rounds (each round's value in brackets)")
    print("\n## Carveout: each kernel as built, at plan()'s shape, with a preferred configuration\n")
    print("| op | x | (S, C) | blocks an SM | KB the blocks need | floor us | "
          + " | ".join("driver" if c is None else f"{c} KB" for c in CONFIGS) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(CONFIGS))
    down_inputs = {}
    for op, (n, k, kind) in SHAPES.items():
        ws, copies = awq_weights(n, k)
        splits, cluster = plan(n, k, GROUP, sms)
        tiles_a_block = 2 if kind == "awq_swiglu" else 1
        blocks = ws[0].qweight.shape[0] // tiles_a_block * cluster
        per_sm = -(-blocks // sms)
        need_kb = per_sm * (tiles_a_block * splits * warp_shared_bytes(M) + 1024) / 1024
        floor = awq_gemm_bytes(n, k, M) / bandwidth * 1e6
        for dtype in (torch.float16, torch.bfloat16):
            x = torch.randn(M, k, device=dev).to(dtype)
            cols = n // 2 if kind == "awq_swiglu" else n
            out = torch.empty(M, cols, device=dev, dtype=dtype if kind == "awq_swiglu" else torch.bfloat16)
            run = lambda i: launch_shape(x, ws[i % copies], None, out, splits, cluster, op=kind)  # noqa: E731
            run(0)  # compiles and sets the function's shared-memory limit
            torch.cuda.synchronize()
            fn = build.function("awq_gemm", kernel_name(M, GROUP, cluster, kind, f16=dtype == torch.float16),
                                dev.index)
            times = {c: [] for c in CONFIGS}
            for _ in range(ROUNDS):
                for c in CONFIGS:
                    prefer(fn, c)
                    times[c].append(time_calls(run, max(CALLS, copies)))
            prefer(fn, None)
            cells = [f"{statistics.median(t):.2f} [{', '.join(f'{v:.2f}' for v in t)}]" for t in times.values()]
            print(f"| {op} | {'fp16' if dtype == torch.float16 else 'bf16'} | ({splits}, {cluster}) | {per_sm} | "
                  f"{need_kb:.1f} | {floor:.2f} | " + " | ".join(cells) + " |", flush=True)
            if op == "down":
                down_inputs[dtype] = (x, out, splits)
        if op == "down":
            down_ws = ws
        else:
            del ws
        torch.cuda.empty_cache()

    print("\n## The 70B down at plan()'s split: the build as it is (80 registers) and at "
          "__launch_bounds__(640, 1) (96)\n")
    code = build.source("awq_gemm")
    assert code.count("__launch_bounds__(AWQ_THREADS)") == 1
    wide = build.compile_source(code.replace("__launch_bounds__(AWQ_THREADS)", "__launch_bounds__(640, 1)"))
    print("| x | S | 80 registers | 96 registers |")
    print("|---|---|---|---|")
    copies = len(down_ws)
    for dtype, (x, out, splits) in down_inputs.items():
        assert splits <= 20, splits
        fn = wide.get_function(kernel_name(M, GROUP, 1, f16=dtype == torch.float16))
        shared = splits * warp_shared_bytes(M)
        fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, shared)
        launches = [(kernel_args(x, w, None, out), w.qweight.shape[0]) for w in down_ws]

        def wide_run(i, fn=fn, shared=shared, launches=launches, splits=splits):
            args, grid = launches[i % copies]
            build.launch_ex(fn.kernel.ptr, (grid,), (32 * splits,), args, shared,
                            torch.cuda.current_stream().cuda_stream, True)

        def as_built(i, x=x, out=out, splits=splits):
            launch_shape(x, down_ws[i % copies], None, out, splits, 1)
        # the same outputs, bitwise (the registers move no arithmetic)
        as_built(0)
        first = out.clone()
        out.fill_(float("nan"))
        wide_run(0)
        torch.cuda.synchronize()
        same = torch.equal(first, out)
        t80, t96 = [], []
        for _ in range(ROUNDS):
            t80.append(time_calls(as_built, max(CALLS, copies)))
            t96.append(time_calls(wide_run, max(CALLS, copies)))
        print(f"| {'fp16' if dtype == torch.float16 else 'bf16'} | {splits} | {statistics.median(t80):.2f} "
              f"[{', '.join(f'{v:.2f}' for v in t80)}] | {statistics.median(t96):.2f} "
              f"[{', '.join(f'{v:.2f}' for v in t96)}]{'' if same else ' (outputs differ!)'} |", flush=True)


if __name__ == "__main__":
    main()
