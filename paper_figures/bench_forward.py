"""Time one engine forward per shape against its HBM floor (weight bytes / measured bandwidth).

    python3 paper_figures/bench_forward.py --models llama-3-8b,llama-3.2-1b --widths 1,8,9 --out DIR

Random bf16 weights at the presets' real shapes on one GPU; every forward is a CUDA graph replay
of our fixed-width forward (torch kernels), timed with CUDA events over many replays (median).
Writes DIR/forward.csv and prints a table.
"""
from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

import pandas as pd
import torch

from swiftspec_core.models.args import ModelArgs
from swiftspec_core.models.presets import PRESETS
from swiftspec_core.models.weights import build_engine, random_state
from swiftspec_core.runtime.floor import copy_bandwidth
from swiftspec_core.graphs import PaddedForward
from timing import median_ms


def time_forward(model, width: int, context: int, reps: int = 50) -> float:
    cache = model.new_cache(context + 64)
    fwd = PaddedForward(model, cache, width, width, graph=True)
    n = context
    cache.length = n
    visible = [[n + j for j in range(i + 1)] for i in range(width)]  # a chain: the densest mask
    rows = list(range(n, n + width))
    for _ in range(5):
        fwd(list(range(width)), rows, rows, n, visible)
    graph, _ = fwd.graphs[fwd.span_for(n + width)]
    return median_ms(graph.replay, reps)[1] / 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="llama-3-8b,llama-3.2-1b")
    ap.add_argument("--widths", default="1,8,9")
    ap.add_argument("--context", type=int, default=512, help="verified tokens in the cache")
    ap.add_argument("--out", default=".")
    ap.add_argument("--eager", action="store_true", help="no torch.compile of the layer blocks")
    a = ap.parse_args()
    bw = copy_bandwidth()
    # The device machine gets a copy of the tree without .git: the caller passes the commit.
    commit = os.environ.get("SWIFTSPEC_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
    rows = []
    for name in a.models.split(","):
        args = ModelArgs.from_hf_config(PRESETS[name].hf_config())
        state = random_state(args, torch.bfloat16, "cuda", seed=0)
        model = build_engine(args, state, dtype=torch.bfloat16, device="cuda", max_seq_len=a.context + 128,
                             compile=not a.eager)
        del state
        floor = args.weight_bytes(2) / bw
        for width in map(int, a.widths.split(",")):
            t = time_forward(model, width, a.context)
            rows.append(dict(model=name, width=width, context=a.context, forward_ms=t * 1e3, floor_ms=floor * 1e3,
                             x_floor=t / floor, bandwidth_tb_s=bw / 1e12,
                             kernels="torch-compile" if model.compiled else "torch", weights="random",
                             dtype="bfloat16", device=torch.cuda.get_device_name(), commit=commit))
        del model
        torch.cuda.empty_cache()
    df = pd.DataFrame(rows)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    df.to_csv(Path(a.out) / "forward.csv", index=False)
    print(df[["model", "width", "kernels", "forward_ms", "floor_ms", "x_floor"]].to_string(index=False, float_format="%.3f"))
    print(f"copy bandwidth {bw / 1e12:.2f} TB/s; commit {commit}; weights random; CUDA graph replays")


if __name__ == "__main__":
    main()
