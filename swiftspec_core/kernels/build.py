"""Our CUDA kernels (the top-level cuda/ folder), compiled at first use through CuPy and cached.

Nothing is built at install and a CPU machine never compiles them: CuPy is imported only when a
kernel is first launched. CuPy compiles with NVRTC for the GPU it runs on (sm_90 on H200) and
caches the binary under ~/.cupy/kernel_cache, keyed by the source text and the options; a source's
`#include "x.cuh"` lines of our own headers are inlined here first, so editing a header changes
the key too. Launches go to torch's current stream, so a torch CUDA graph capture records them.
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import numpy as np
import torch

CUDA_DIR = Path(__file__).resolve().parents[2] / "cuda"
OPTIONS = ("-std=c++17",)  # no fast math: the torch references round as IEEE does
_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.MULTILINE)


def source(name: str) -> str:
    """cuda/NAME.cu with our own headers inlined (each once)."""
    seen: set[str] = set()

    def inline(match: re.Match) -> str:
        header = match.group(1)
        if header in seen:
            return ""
        seen.add(header)
        text = (CUDA_DIR / header).read_text().replace("#pragma once\n", "")  # inlined once already
        return _INCLUDE.sub(inline, text)

    return _INCLUDE.sub(inline, (CUDA_DIR / f"{name}.cu").read_text())


def cuda_include() -> tuple[str, ...]:
    """-I for the toolkit's headers (cuda_bf16.h) where NVRTC does not find them built in."""
    for home in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "include" / "cuda_bf16.h").exists():
            return (f"-I{Path(home) / 'include'}",)
    return ()


@functools.cache
def module(name: str, device: int):
    import cupy

    with cupy.cuda.Device(device):
        return cupy.RawModule(code=source(name), options=OPTIONS + cuda_include(), backend="nvrtc")


@functools.cache
def function(name: str, kernel: str, device: int, shared_mem: int = 0):
    fn = module(name, device).get_function(kernel)
    if shared_mem > 48 * 1024:  # above 48 KB a kernel must opt in to more dynamic shared memory
        fn.max_dynamic_shared_size_bytes = shared_mem
    return fn


def launch(name: str, kernel: str, grid: tuple[int, ...], block: tuple[int, ...], args: tuple,
           shared_mem: int = 0) -> None:
    """Launch `kernel` of cuda/NAME.cu on torch's current device and stream. args: pointers as
    ptr(tensor), scalars as numpy scalars of the kernel's parameter types (np.int32, np.float32)."""
    import cupy

    device = torch.cuda.current_device()
    fn = function(name, kernel, device, shared_mem)
    with cupy.cuda.Device(device), cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
        fn(grid, block, args, shared_mem=shared_mem)


def ptr(t: torch.Tensor) -> np.uint64:
    """A tensor's device address as a kernel's pointer argument (8 bytes)."""
    return np.uint64(t.data_ptr())
