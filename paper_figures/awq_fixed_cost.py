"""How the AWQ GEMM's time splits into a fixed cost and a cost a group, one H200 (NOTES v243):

    PYTHONPATH=. python3 paper_figures/awq_fixed_cost.py --out DIR

At the 70B o's N (8192, plan's S = 22 warps a tile, one block an SM) and qkv's (10240, S = 11, two
blocks on 28 SMs), K is chosen so that every warp sums exactly g = 1..6 groups of 128 (K = 128 S g),
and each shape is timed at M = 8 (bf16 and fp16 x) as awq_fp16_probe.py times it (graph replays, PDL
on), with the weight copies and without them (awq_fp16_probe.without_copies: the dequantization
alone, outputs wrong). A least-squares line time = fixed + g * per_group says what one wave costs
whatever its work (launch, first loads, combine, store) and what a group costs a warp. Random codes,
zeros, scales and x (labelled)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from paper_figures.awq_fp16_probe import time_launches, without_copies
from swiftspec_bench.kernel_ops import input_copies, random_awq
from swiftspec_bench.kernel_shapes import awq_gemm_bytes
from swiftspec_core.kernels import build
from swiftspec_core.models.args import awq_bytes
from swiftspec_core.runtime.floor import copy_bandwidth

SHAPES = {"o": (8192, 22), "qkv": (10240, 11)}  # N, warps a tile (plan()'s at K = 8192)
GROUPS_A_WARP = (1, 2, 3, 4, 5, 6)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bandwidth = copy_bandwidth()
    full, bare = build.compile_source(build.source("awq_gemm")), without_copies()
    rows = []
    print(f"copy bandwidth {bandwidth / 1e12:.2f} TB/s; random weights and x (labelled); M = 8")
    for op, (n, splits) in SHAPES.items():
        for g in GROUPS_A_WARP:
            k = 128 * splits * g
            copies = input_copies(awq_bytes(n * k, 128))
            ws = [random_awq(n, k) for _ in range(copies)]
            row = dict(op=op, n=n, k=k, splits=splits, groups_a_warp=g, weights="random",
                       floor_us=round(awq_gemm_bytes(n, k, 8) / bandwidth * 1e6, 2))
            for operands, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
                x = torch.randn(8, k, device="cuda").to(dtype)
                out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)
                for variant, module in (("us", full), ("no_copies_us", bare)):
                    row[f"{operands}_{variant}"] = round(time_launches(module, x, ws, out, splits), 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
            ws.clear()
            torch.cuda.empty_cache()
    (args.out / "rows.json").write_text(json.dumps(rows, indent=1))
    print("| op | S | fit of | fixed us | us a group a warp | floor us a group a warp |")
    print("|---|---|---|---|---|---|")
    for op in SHAPES:
        mine = [r for r in rows if r["op"] == op]
        g = np.array([r["groups_a_warp"] for r in mine], dtype=float)
        floor_slope, _ = np.polyfit(g, [r["floor_us"] for r in mine], 1)
        for column in ("bf16_us", "bf16_no_copies_us", "fp16_us", "fp16_no_copies_us"):
            slope, fixed = np.polyfit(g, [r[column] for r in mine], 1)
            print(f"| {op} | {mine[0]['splits']} | {column} | {fixed:.2f} | {slope:.2f} | {floor_slope:.2f} |")


if __name__ == "__main__":
    main()
