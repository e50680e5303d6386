"""awq_gemm with fp16 x (its fp16-operand kernels, awq_*_f16) beside bf16 x on the 70B's four layer
GEMMs and the fused gate_up + SwiGLU, one H200 (NOTES v211, v212):

    PYTHONPATH=. python3 paper_figures/awq_fp16_probe.py --out DIR [--ops qkv,o,gate_up,down]

fp16 holds a nibble in place at bits 0..3 and 4..7 (10 mantissa bits), so a word of codes takes 5
extraction instructions where bf16 takes 7. Per GEMM through awq_gemm (awq_swiglu for
gate_up_swiglu; PDL on, plan()'s shape, as the kernel table): median us of graph replays at M = 1,
8, 16 for both, and the same launches without the weight copies (the dequantization alone, outputs
wrong; awq_gemm only), and the floor (4-bit bytes / measured copy bandwidth). Accuracy against the exact-weight float64 sum (x the same values in both): the share
of outputs bitwise equal to it rounded to bf16, and the largest difference in bf16 ulps; row
invariance of the fp16 kernel (one row alone, bitwise row 5 of 8 and of 16). Random codes, zeros
and scales (kernel_ops.random_awq), random x: labelled as such in every row."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_bench.kernel_shapes import awq_gemm_bytes
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import awq_gemm, awq_swiglu, kernel_args, kernel_name, plan, warp_shared_bytes
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.models.awq import dequantize
from swiftspec_core.runtime.floor import copy_bandwidth

SHAPES = {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672),
          "gate_up_swiglu": (57344, 8192)}  # Llama-3-70B
COPIES = ("copy16_streamed(stage + c.copy_dst, copy_group + 1024 * p, streamed);",
          "copy16_streamed(stage + copy_dst16(c.copy_dst), copy_group + 1024 * p + 512, streamed);",
          "if (lane < 10)\n        copy16_streamed(meta_s + (unsigned)(ordinal & (AWQ_STAGES - 1)) * AWQ_META_BYTES + "
          "16 * lane, meta_next, streamed);")  # the whole statement, its guard with it


def source_without_copies() -> str:
    """awq_gemm.cu without its weight copies (removed from the text: the probe's ablation only)."""
    code = build.source("awq_gemm")
    for line in COPIES:
        assert code.count(line) == 1, f"awq_gemm_block.cuh changed: {line!r} found {code.count(line)} times"
        code = code.replace(line, "")
    return code


def without_copies():
    return build.compile_source(source_without_copies())


def launcher(module, x: torch.Tensor, w, out: torch.Tensor, splits: int):
    """One launch of `module`'s awq_gemm for x's dtype at (splits, 1), PDL on."""
    fn = module.get_function(kernel_name(x.shape[0], w.group, 1, f16=x.dtype == torch.float16))
    shared = splits * warp_shared_bytes(x.shape[0])
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, shared)
    args = kernel_args(x, w, None, out)

    def call() -> None:
        build.launch_ex(fn.kernel.ptr, (w.qweight.shape[0],), (32 * splits,), args, shared,
                        torch.cuda.current_stream().cuda_stream, True)
    return call


def time_launches(module, x: torch.Tensor, ws: list, out: torch.Tensor, splits: int) -> float:
    """Median us a call of `module`'s awq_gemm at (splits, 1) on the weight copies `ws` in turn."""
    calls = [launcher(module, x, w, out, splits) for w in ws]
    return time_calls(lambda i: calls[i % len(ws)](), max(CALLS, len(ws)))


def accuracy(w, m: int) -> dict:
    """Both kernels on the same x values (fp16-exact bf16) against the float64 exact-weight sum."""
    x = (torch.randn(m, w.qweight.shape[1], device="cuda") * 0.5).to(torch.bfloat16)
    x[x.abs() < 2**-14] = 0  # fp16's normal range: both kernels see the same values
    x16 = x.to(torch.float16)
    assert torch.equal(x16.to(torch.bfloat16), x)
    exact = (x.double() @ dequantize(w, torch.float64).t())  # [m, N]
    target = exact.to(torch.bfloat16)
    row = {}
    for operands, xin in (("bf16", x), ("fp16", x16)):
        out = torch.full((m, w.n), float("nan"), device="cuda", dtype=torch.bfloat16)
        awq_gemm(xin, w, out=out)
        torch.cuda.synchronize()
        scale = exact.abs().amax(dim=1, keepdim=True)  # a row's largest output
        row[f"{operands}_equal"] = round(float((out == target).float().mean()), 5)
        row[f"{operands}_max_err"] = float(f"{float(((out.double() - exact).abs() / scale).max()):.3g}")  # of the row's max
        if operands == "fp16" and m >= 8:  # row 5 alone, bitwise row 5 of m
            alone = awq_gemm(x16[5:6].contiguous(), w)
            torch.cuda.synchronize()
            row["fp16_row_invariant"] = bool(torch.equal(alone[0], out[5]))
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ops", default=",".join(SHAPES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bandwidth = copy_bandwidth()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bare = without_copies()
    rows = []
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s; random weights and x (labelled)")
    for op in args.ops.split(","):
        n, k = SHAPES[op]
        splits, cluster = plan(n, k, 128, sms)
        assert cluster == 1, (op, splits, cluster)
        copies = input_copies(awq_bytes(n * k, 128))
        ws = [random_awq(n, k) for _ in range(copies)]
        swiglu = op.endswith("swiglu")
        for m in (1, 8, 16):
            floor_us = awq_gemm_bytes(n, k, m) / bandwidth * 1e6
            row = dict(op=op, n=n, k=k, m=m, splits=splits, floor_us=round(floor_us, 2), weights="random")
            for operands, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
                x = torch.randn(m, k, device="cuda").to(dtype)
                out = torch.empty(m, n // 2 if swiglu else n, device="cuda", dtype=dtype if swiglu else torch.bfloat16)
                if swiglu:
                    row[f"{operands}_us"] = round(time_calls(lambda i: awq_swiglu(x, ws[i % copies], out=out),
                                                             max(CALLS, copies)), 2)
                    continue
                row[f"{operands}_us"] = round(time_calls(lambda i: awq_gemm(x, ws[i % copies], out=out),
                                                         max(CALLS, copies)), 2)
                row[f"{operands}_no_copies_us"] = round(time_launches(bare, x, ws, out, splits), 2)
            row["fp16_gain"] = round(1 - row["fp16_us"] / row["bf16_us"], 4)
            if m in (8, 16) and not swiglu:
                row.update(accuracy(ws[0], m))
            rows.append(row)
            print(json.dumps(row), flush=True)
        ws.clear()
        torch.cuda.empty_cache()
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    print("| op | M | floor | bf16 | fp16 | gain | bf16 no copies | fp16 no copies | equal bf16 / fp16 | max error / row max | invariant |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['op']} | {r['m']} | {r['floor_us']} | {r['bf16_us']} | {r['fp16_us']} | {100 * r['fp16_gain']:.1f}% "
              f"| {r.get('bf16_no_copies_us', '')} | {r.get('fp16_no_copies_us', '')} | {r.get('bf16_equal', '')} / {r.get('fp16_equal', '')} "
              f"| {r.get('bf16_max_err', '')} / {r.get('fp16_max_err', '')} | {r.get('fp16_row_invariant', '')} |")


if __name__ == "__main__":
    main()
