"""One timing loop for the scripts here: CUDA events around each call, medians; and the device line
the A/B tables start with."""
from __future__ import annotations

import statistics
import time

import torch


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
