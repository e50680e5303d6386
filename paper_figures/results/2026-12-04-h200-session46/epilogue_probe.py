"""Session 46, call 8 (NOTES v265): where the AWQ GEMM's ~1.2 us epilogue goes (call 3: thread 0's exit
~1.2 us after the barrier behind the loop on o, 1.4 on down, 1.5 on qkv). prologue_probe.py's
method with the five marks after the loop: A warp 0's loop done, B the barrier behind every warp's
loop, C thread 0's part of the combine done (the tile's warps' pieces summed in order, 128 threads),
D the barrier after the combine, E thread 0's part of the element pass done (its sum read, rounded,
stored); spans per block, medians (10th / 90th percentile) over the blocks of one replay's launches:
barrier (A -> B), combine (B -> C), sync (C -> D), elements (D -> E), exit (E -> thread 0's exit).
M = 8, fp16 x, plan()'s shapes, weight copies rotated past L2. Random INT4 weights and x (labelled).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session46/epilogue_probe.py
"""
import json
import statistics

import numpy as np
import torch

import paper_figures.forward_timeline as ft
from swiftspec_bench.kernel_bench import median_us
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_core.graphs import capture
from swiftspec_core.kernels.awq_gemm import awq_gemm, plan
from swiftspec_core.models.args import awq_bytes

SHAPES = {"o": (8192, 8192), "qkv": (10240, 8192), "down": (8192, 28672)}  # Llama-3-70B
EPILOGUE_MARKS = (
    ("  copies_wait<0>();  // only empty groups are left; the rings become the cluster's block sums\n  __syncthreads();\n",
     "  SWIFTSPEC_MARK(0);\n  copies_wait<0>();  // only empty groups are left; the rings become the cluster's block sums\n"
     "  __syncthreads();\n  SWIFTSPEC_MARK(1);\n"),
    ("    piece[0] = sum;  // only this thread reads or writes this piece of any warp\n  }\n  __syncthreads();\n",
     "    piece[0] = sum;  // only this thread reads or writes this piece of any warp\n  }\n  SWIFTSPEC_MARK(2);\n"
     "  __syncthreads();\n  SWIFTSPEC_MARK(3);\n"),
    ("  if constexpr (kAllReduce) {\n    __syncthreads();  // the whole tile in tile_out",
     "  SWIFTSPEC_MARK(4);\n  if constexpr (kAllReduce) {\n    __syncthreads();  // the whole tile in tile_out"),
)
COLUMNS = ("start to loop done", "barrier", "combine", "sync", "elements", "exit")


def cell(v) -> str:
    return f"{statistics.median(v):.2f} ({np.percentile(v, 10):.2f} / {np.percentile(v, 90):.2f})"


def real_kernel() -> list[dict]:
    ft.MARK_SETS["awq_gemm_block.cuh"] = EPILOGUE_MARKS
    ft.instrument_builds()
    device = torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    rows = []
    for op, (n, k) in SHAPES.items():
        copies = input_copies(awq_bytes(n * k, 128))
        calls = max(CALLS, copies)
        ws = [random_awq(n, k) for _ in range(copies)]
        x = torch.randn(8, k, device="cuda").to(torch.float16)
        out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)

        def run() -> None:
            for i in range(calls):
                awq_gemm(x, ws[i % copies], out=out)
        graph, _ = capture(run)
        us = median_us(graph, calls)
        ft.records(device, check=False)
        graph.replay()
        torch.cuda.synchronize()
        ordered = ft.launches(ft.records(device))
        spans = {c: [] for c in COLUMNS}
        for prev, a in zip(ordered, ordered[1:]):
            prev_last = {}
            for sm, last in zip(ft.sm_ids(prev).tolist(), prev[:, ft.LAST].astype(np.int64).tolist()):
                prev_last[sm] = max(prev_last.get(sm, 0), last)
            marks = a[:, 5:5 + len(ft.MARKS)].astype(np.int64)
            for j, sm in enumerate(ft.sm_ids(a).tolist()):
                if sm in prev_last and (marks[j] > 0).all():
                    t = [int(a[j, 1]), *marks[j].tolist(), int(a[j, 2])]
                    for c, d in zip(COLUMNS, np.diff(t)):
                        spans[c].append(d / 1e3)
        row = dict(op=op, x="fp16", plan=plan(n, k, 128, sms), us_a_call=round(us, 2),
                   **{c: cell(v) for c, v in spans.items()}, blocks=len(spans["exit"]))
        rows.append(row)
        print(json.dumps(row), flush=True)
        del graph
        ws.clear()
        torch.cuda.empty_cache()
    return rows


def table(rows: list[dict]) -> None:
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(v) for v in r.values()) + " |")


def main() -> None:
    real = real_kernel()
    print(f"\n# {torch.cuda.get_device_name()}; random INT4 weights and x\n\n## The AWQ GEMM's epilogue, stamped "
          "(us, median (10th / 90th percentile) over blocks)\n")
    table(real)


if __name__ == "__main__":
    main()
