"""Wall time of a block of device work (the decoders' rounds, the split workers' steps)."""
from __future__ import annotations

import time

import torch


class Stopwatch:
    """Wall time of a block; synchronizes the device first so GPU work is counted where it ran."""

    def __init__(self, device: torch.device):
        self.cuda = torch.device(device).type == "cuda"
        self.seconds = 0.0

    def __enter__(self):
        if self.cuda:
            torch.cuda.synchronize()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self._t0
