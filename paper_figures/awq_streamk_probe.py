"""The stream-K AWQ GEMM beside plan()'s launch on every Llama AWQ projection it takes, one GPU
(NOTES v252):

    PYTHONPATH=. python3 paper_figures/awq_streamk_probe.py --out DIR [--models llama-3-70b,..] [--m 8]

For each [N, K] of Llama-3-70B / 8B / 3.2-3B / 3.2-1B at TP 1 and 2 (gate_up as awq_swiglu, fused
where plan() fuses it) that the stream-K kernel takes on this GPU (awq_gemm.streamk_slots): median
us of graph replays (PDL on, weight copies past twice the L2, as the kernel table) of plan()'s
launch and of the stream-K one, bf16 and fp16 x, with the units on plan()'s busiest SM and on
stream-K's, the floor (4-bit bytes / measured copy bandwidth) and whether prefers_streamk picks it.
Random codes, zeros and scales (kernel_ops.random_awq), random x: labelled in every row."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from swiftspec_bench.kernel_bench import time_calls
from swiftspec_bench.kernel_ops import CALLS, awq_weights
from swiftspec_bench.kernel_shapes import AWQ_PROJECTIONS, awq_gemm_bytes, gemm_shape, shard_args
from swiftspec_core.kernels.awq_gemm import (COLUMNS_PER_BLOCK, STREAMK_SPLITS, fuses_swiglu, launch_shape,
                                             launch_streamk, plan, prefers_streamk, run_planned, streamk_slots)
from swiftspec_core.kernels.gemm import _sm_count
from swiftspec_core.runtime.floor import copy_bandwidth

MODELS = ("llama-3-70b", "llama-3-8b", "llama-3.2-3b", "llama-3.2-1b")


def busiest_units(n: int, k: int, sms: int, swiglu: bool) -> int:
    """(tile, group) units on plan()'s busiest SM (prefers_streamk's count)."""
    tiles, groups = -(-n // COLUMNS_PER_BLOCK), k // 128
    splits, cluster = plan(n, k, 128, sms)
    pair = 2 if swiglu and fuses_swiglu(n, k, 128, sms) else 1
    return -(-(tiles // pair * cluster) // sms) * pair * -(-groups // cluster)


def time_both(n: int, k: int, m: int, dtype: torch.dtype, swiglu: bool, ws: list, copies: int) -> tuple[float, float]:
    """(plan us, stream-K us) a call."""
    x = torch.randn(m, k, device="cuda").to(dtype)
    out = torch.empty(m, n // 2 if swiglu else n, device="cuda", dtype=torch.bfloat16)
    op = "awq_swiglu" if swiglu else "awq_gemm"
    sms = _sm_count(0)
    if swiglu:
        splits, cluster = plan(n, k, 128, sms)
        planned = lambda i: launch_shape(x, ws[i % copies], None, out, splits, cluster, op=op)  # noqa: E731
    else:
        planned = lambda i: run_planned(x, ws[i % copies], None, out, streamk=False)  # noqa: E731
    streamk = lambda i: launch_streamk(x, ws[i % copies], None, out, op=op)  # noqa: E731
    calls = max(CALLS, copies)
    return time_calls(planned, calls), time_calls(streamk, calls)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--m", default="8")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sms, bandwidth = _sm_count(0), copy_bandwidth()
    rows = []
    print(f"# stream-K vs plan(), {torch.cuda.get_device_name()} ({sms} SMs), copy bandwidth {bandwidth / 1e9:.0f} GB/s;"
          " random INT4 weights and x; us a call, median of graph replays")
    print("| shape | N | K | M | x | plan (S, C) | units plan / SK | plan us | stream-K us | SK / plan | floor us | picks SK |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models.split(","):
        for tp in (1, 2):
            for projection in AWQ_PROJECTIONS:
                n, k, _ = gemm_shape(shard_args(model, tp), projection)
                swiglu = projection == "gate_up"
                if streamk_slots(n, k, 128, sms, STREAMK_SPLITS, swiglu) is None or (swiglu and not fuses_swiglu(n, k, 128, sms)):
                    continue
                ws, copies = awq_weights(n, k)
                for m in (int(v) for v in args.m.split(",")):
                    floor = awq_gemm_bytes(n, k, m) / bandwidth * 1e6
                    for dtype in (torch.bfloat16, torch.float16):
                        plan_us, sk_us = time_both(n, k, m, dtype, swiglu, ws, copies)
                        row = {"model": model, "tp": tp, "projection": projection, "n": n, "k": k, "m": m,
                               "x": str(dtype).removeprefix("torch."), "plan": plan(n, k, 128, sms),
                               "units_plan": busiest_units(n, k, sms, swiglu), "units_streamk": -(-(-(-n // 64) * (k // 128)) // sms),
                               "plan_us": round(plan_us, 2), "streamk_us": round(sk_us, 2), "floor_us": round(floor, 2),
                               "prefers_streamk": prefers_streamk(n, k, 128, sms, swiglu), "weights": "random int4"}
                        rows.append(row)
                        print(f"| {model.removeprefix('llama-')} tp{tp} {projection} | {n} | {k} | {m} | {row['x']} | "
                              f"{row['plan']} | {row['units_plan']} / {row['units_streamk']} | {plan_us:.2f} | "
                              f"{sk_us:.2f} | {sk_us / plan_us:.3f} | {floor:.2f} | {row['prefers_streamk']} |", flush=True)
                del ws
                torch.cuda.empty_cache()
    (out / "streamk.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
