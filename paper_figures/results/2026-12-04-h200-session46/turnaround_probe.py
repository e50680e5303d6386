"""Session 46, call 3 (NOTES v260): where a launch of the AWQ GEMM spends its time outside the loop,
SM by SM. awq_phases.py measures a block's reach against the *last* end of the launch before; here
each block of launch i is set against the block of launch i - 1 that ran on its own SM, with
forward_timeline.py's stamped build (thread 0's entry and exit, the last thread's exit, and the five
marks of awq_gemm_block.cuh). Per shape, medians (10th / 90th percentile) over every block of one
replay's launches but the first, us:
  turnaround  its entry after its SM's previous block's last thread left (dispatch; it includes the
              stamped build's record, an atomic, after that stamp)
  prologue    its PDL wait reached after its entry (lane constants, accumulators zeroed, first copies)
  wait        the wait's return after it reached it
  first       warp 0's first chunk of codes landed after the wait's return
  loop        warp 0's loop done after that
  barrier     the block's barrier after the loop (its slowest warp)
  epilogue    thread 0's exit after the barrier (combine, rounding, stores)
  tail        a launch's last thread-0 exit after its median block's
and the stamped build's us a call and period (call 1's carveout.md has the plain build's). M = 8, plan()'s
shapes, PDL on, weight copies rotated past L2 as the kernel table times them. Random INT4 weights and
x (labelled).

    PYTHONPATH=. python3 paper_figures/results/2026-12-04-h200-session46/turnaround_probe.py
"""
import json
import statistics

import numpy as np
import torch

from paper_figures.forward_timeline import LAST, MARKS, instrument_builds, launches, records, sm_ids
from swiftspec_bench.kernel_bench import median_us
from swiftspec_bench.kernel_ops import CALLS, input_copies, random_awq
from swiftspec_core.graphs import capture
from swiftspec_core.kernels.awq_gemm import awq_gemm, plan
from swiftspec_core.models.args import awq_bytes

SHAPES = {"o": (8192, 8192), "qkv": (10240, 8192), "down": (8192, 28672)}  # Llama-3-70B
COLUMNS = ("turnaround", "prologue", "wait", "first", "loop", "barrier", "epilogue")


def spans(ordered: list[np.ndarray]) -> tuple[dict, list[float]]:
    """Per block of every launch but the first: COLUMNS in us; and each launch's tail."""
    out, tails = {c: [] for c in COLUMNS}, []
    for prev, a in zip(ordered, ordered[1:]):
        prev_last = {}
        for sm, last in zip(sm_ids(prev).tolist(), prev[:, LAST].astype(np.int64).tolist()):
            prev_last[sm] = max(prev_last.get(sm, 0), last)
        start, end = a[:, 1].astype(np.int64), a[:, 2].astype(np.int64)
        marks = a[:, 5:5 + len(MARKS)].astype(np.int64)  # waiting, waited, x arrived, loop done, combined
        for j, sm in enumerate(sm_ids(a).tolist()):
            if sm in prev_last and (marks[j] > 0).all():
                t = [prev_last[sm], start[j], *marks[j].tolist(), end[j]]
                for c, d in zip(COLUMNS, np.diff(t)):
                    out[c].append(d / 1e3)
        tails.append((int(end.max()) - float(np.median(end))) / 1e3)
    return out, tails


def cell(v: list[float]) -> str:
    return f"{statistics.median(v):.2f} ({np.percentile(v, 10):.2f} / {np.percentile(v, 90):.2f})"


def main() -> None:
    instrument_builds()  # before any kernel is built
    device = torch.cuda.current_device()
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    rows = []
    for op, (n, k) in SHAPES.items():
        copies = input_copies(awq_bytes(n * k, 128))
        calls = max(CALLS, copies)
        ws = [random_awq(n, k) for _ in range(copies)]
        for operands, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            if op != "o" and operands == "bf16":
                continue
            x = torch.randn(8, k, device="cuda").to(dtype)
            out = torch.empty(8, n, device="cuda", dtype=torch.bfloat16)

            def run() -> None:
                for i in range(calls):
                    awq_gemm(x, ws[i % copies], out=out)
            graph, _ = capture(run)
            us = median_us(graph, calls)
            records(device, check=False)
            graph.replay()
            torch.cuda.synchronize()
            ordered = launches(records(device))
            assert len(ordered) == calls, (len(ordered), calls)
            ends = [int(a[:, 2].max()) for a in ordered]
            split, tails = spans(ordered)
            row = dict(op=op, operands=operands, plan=plan(n, k, 128, sms), us_a_call=round(us, 2),
                       period_us=round(statistics.median(np.diff(ends)) / 1e3, 2),
                       **{c: cell(v) for c, v in split.items()}, tail=cell(tails), blocks=len(split["loop"]))
            rows.append(row)
            print(json.dumps(row), flush=True)
            del graph
        ws.clear()
        torch.cuda.empty_cache()
    print(f"\n# {torch.cuda.get_device_name()}, M = 8, stamped build, random INT4 weights and x; us, median "
          "(10th / 90th percentile) over blocks\n")
    keys = ["op", "operands", "plan", "us_a_call", "period_us", *COLUMNS, "tail"]
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
