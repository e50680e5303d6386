"""The hardware floor of a forward: the bytes of weights it must read over measured bandwidth."""
from __future__ import annotations

import statistics

import torch


def copy_bandwidth(device="cuda", gib: float = 2.0) -> float:
    """Bytes per second of a device-to-device copy, counting bytes read and bytes written."""
    n = int(gib * 2**30) // 2
    a = torch.empty(n, dtype=torch.bfloat16, device=device).normal_()
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        b.copy_(a)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    del a, b
    torch.cuda.empty_cache()
    return 2 * n * 2 / statistics.median(times)
