"""One timing loop for the scripts here: CUDA events around each call, medians; the device line
the A/B tables start with, and their rows as markdown; a GEMM A/B's check and timing of its sides;
and how a script ends on bad input."""
from __future__ import annotations

import statistics
import sys
import time

import torch


def fail(message: str) -> None:
    """A script's bad input or fault: one `error:` line, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def median_ms(fn, reps: int, warmup: int = 0) -> tuple[float, float]:
    """(median wall ms, median CUDA-event ms) of fn() over `reps` calls after `warmup` untimed
    ones; the device is synchronized before and after each call."""
    wall, gpu = [], []
    for i in range(warmup + reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        if i >= warmup:
            wall.append((time.perf_counter() - t0) * 1e3)
            gpu.append(s.elapsed_time(e))
    return statistics.median(wall), statistics.median(gpu)


def device_line() -> tuple[float, int]:
    """Print this GPU's name, measured copy bandwidth and SM count; return (bytes/s, SMs): an A/B
    table's floors divide by that bandwidth and its launch plans depend on the SMs."""
    from swiftspec_core.kernels.gemm import _sm_count
    from swiftspec_core.runtime.floor import copy_bandwidth

    bandwidth, sms = copy_bandwidth(), _sm_count(torch.cuda.current_device())
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.3f} TB/s, {sms} SMs\n")
    return bandwidth, sms


def print_rows(rows: list[dict]) -> None:
    """Rows of one table (the first row's keys head it) as markdown, floats to two decimals."""
    keys = list(rows[0]) if rows else []
    print("| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.values()) + " |")


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """max |got - want| / max |want| (NaN where got holds NaN: an unwritten output)."""
    return ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()


def ab_gemm(sides: dict, shape: tuple[int, int], calls: int) -> tuple[dict[str, float], dict[str, float]]:
    """Two or more sides of a GEMM A/B on the same operands: sides[name](out, i) runs call i into out
    ([M, N] bf16, filled with NaN first). -> (each later side's max abs difference from the first
    over the first's max abs, after call 0 of each: NaN where a side left an output unwritten;
    median us a call of each side over `calls` calls in one CUDA graph, kernel_bench.time_calls)."""
    from swiftspec_bench.kernel_bench import time_calls

    outs = {name: torch.full(shape, float("nan"), device="cuda", dtype=torch.bfloat16) for name in sides}
    for name, run in sides.items():
        run(outs[name], 0)
    first, *later = sides
    agreement = {name: relative_error(outs[name], outs[first]) for name in later}
    us = {name: time_calls(lambda i, run=run, out=outs[name]: run(out, i), calls) for name, run in sides.items()}
    return agreement, us
