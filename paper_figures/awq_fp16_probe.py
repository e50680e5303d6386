"""awq_gemm with fp16 mma operands (cuda/awq_gemm.cu built with AWQ_FP16_OPERANDS) beside its bf16
kernel on the 70B's four layer GEMMs, one H200 (NOTES v211):

    PYTHONPATH=. python3 paper_figures/awq_fp16_probe.py --out DIR [--ops qkv,o,gate_up,down]

fp16 holds a nibble in place at bits 0..3 and 4..7 (10 mantissa bits), so a word of codes takes 5
extraction instructions where bf16 takes 7; x must then be fp16 (here: the probe converts its bf16
x once, exactly, outside the timing). Per GEMM at plan()'s (S, C), PDL on as the kernel table:
median us of graph replays at M = 1, 8, 16 for both, with and without the weight copies (no
copies: the dequantization alone, outputs wrong), and the floor (4-bit bytes / measured copy
bandwidth). Accuracy against the exact-weight float64 sum (x the same values in both): the share
of outputs bitwise equal to it rounded to bf16, and the largest difference in bf16 ulps; row
invariance of the fp16 kernel (one row alone, bitwise row 5 of 8 and of 16). Random codes, zeros
and scales (kernel_ops.random_awq), random x: labelled as such in every row."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_core.kernels import build
from swiftspec_core.kernels.awq_gemm import kernel_name, plan, warp_shared_bytes
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.models.awq import dequantize
from swiftspec_core.runtime.floor import copy_bandwidth

SHAPES = {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)}  # Llama-3-70B
COPIES = ("copy16(stage + c.copy_dst, copy_group + 1024 * p);",
          "copy16(stage + copy_dst16(c.copy_dst), copy_group + 1024 * p + 512);",
          "if (lane < 10) copy16(meta_s + (unsigned)(ordinal & (AWQ_STAGES - 1)) * AWQ_META_BYTES + 16 * lane, meta_next);")


def modules() -> dict[tuple[str, bool], object]:
    """(operands, copies) -> the compiled awq_gemm.cu: bf16 or fp16 operands, with or without the
    weight copies (removed from the text: the probe's ablation only)."""
    out = {}
    for operands in ("bf16", "fp16"):
        code = ("#define AWQ_FP16_OPERANDS 1\n" if operands == "fp16" else "") + build.source("awq_gemm")
        out[operands, True] = build.compile_source(code)
        for line in COPIES:
            assert code.count(line) == 1, line
            code = code.replace(line, "")
        out[operands, False] = build.compile_source(code)
    return out


def launcher(module, x: torch.Tensor, w, out: torch.Tensor, splits: int):
    fn = module.get_function(kernel_name(x.shape[0], w.group, 1))
    shared = splits * warp_shared_bytes(x.shape[0])
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, shared)
    m, k = x.shape
    z = np.uint64(0)

    def call() -> None:
        args = (build.ptr(x), build.ptr(w.qweight), build.ptr(w.qzeros), build.ptr(w.scales), z, build.ptr(out),
                np.int32(m), np.int32(w.n), np.int32(k), z, z, z, z, z, np.float32(0.0))
        build.launch_ex(fn.kernel.ptr, (w.qweight.shape[0],), (32 * splits,), args, shared,
                        torch.cuda.current_stream().cuda_stream, True)
    return call


def accuracy(mods, w, splits: int, m: int) -> dict:
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
        launcher(mods[operands, True], xin, w, out, splits)()
        torch.cuda.synchronize()
        ulp = (exact.abs().clamp_min(1e-30).log2().floor() - 7).exp2()  # a bf16 ulp at each value
        row[f"{operands}_equal"] = round(float((out == target).float().mean()), 5)
        row[f"{operands}_max_ulps"] = round(float(((out.double() - exact).abs() / ulp).max()), 2)
        if operands == "fp16" and m >= 8:  # row 5 alone, bitwise row 5 of m
            alone = torch.full((1, w.n), float("nan"), device="cuda", dtype=torch.bfloat16)
            launcher(mods[operands, True], x16[5:6].contiguous(), w, alone, splits)()
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
    mods = modules()
    rows = []
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s; random weights and x (labelled)")
    for op in args.ops.split(","):
        n, k = SHAPES[op]
        splits, cluster = plan(n, k, 128, sms)
        assert cluster == 1, (op, splits, cluster)
        copies = input_copies(awq_bytes(n * k, 128))
        ws = [random_awq(n, k) for _ in range(copies)]
        for m in (1, 8, 16):
            floor_us = (awq_bytes(n * k, 128) + 2 * m * (n + k)) / bandwidth * 1e6  # kernel_shapes.floor_bytes
            row = dict(op=op, n=n, k=k, m=m, splits=splits, floor_us=round(floor_us, 2), weights="random")
            for operands in ("bf16", "fp16"):
                x = torch.randn(m, k, device="cuda").to(torch.float16 if operands == "fp16" else torch.bfloat16)
                out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
                for with_copies in (True, False):
                    calls = [launcher(mods[operands, with_copies], x, w, out, splits) for w in ws]
                    us = time_calls(lambda i: calls[i % copies](), max(CALLS, copies))
                    row[f"{operands}{'' if with_copies else '_no_copies'}_us"] = round(us, 2)
            row["fp16_gain"] = round(1 - row["fp16_us"] / row["bf16_us"], 4)
            if m in (8, 16):
                row.update(accuracy(mods, ws[0], splits, m))
            rows.append(row)
            print(json.dumps(row), flush=True)
        del ws
        torch.cuda.empty_cache()
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    print("| op | M | floor | bf16 | fp16 | gain | bf16 no copies | fp16 no copies | equal bf16 / fp16 | max ulps | invariant |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['op']} | {r['m']} | {r['floor_us']} | {r['bf16_us']} | {r['fp16_us']} | {100 * r['fp16_gain']:.1f}% "
              f"| {r['bf16_no_copies_us']} | {r['fp16_no_copies_us']} | {r.get('bf16_equal', '')} / {r.get('fp16_equal', '')} "
              f"| {r.get('bf16_max_ulps', '')} / {r.get('fp16_max_ulps', '')} | {r.get('fp16_row_invariant', '')} |")


if __name__ == "__main__":
    main()
