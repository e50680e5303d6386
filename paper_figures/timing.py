"""One timing loop for the scripts here: CUDA events around each call, medians."""
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
