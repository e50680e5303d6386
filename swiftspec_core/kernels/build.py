"""Our CUDA kernels (the top-level cuda/ folder), compiled at first use through CuPy and cached.

Nothing is built at install and a CPU machine never compiles them: CuPy is imported only when a
kernel is first launched. CuPy compiles with NVRTC for the GPU it runs on (sm_90 on H200) and
caches the binary under ~/.cupy/kernel_cache, keyed by the source text and the options; a source's
`#include "x.cuh"` lines of our own headers are inlined here first, so editing a header changes
the key too. Launches go to torch's current stream, so a torch CUDA graph capture records them.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
from pathlib import Path

import numpy as np
import torch

CUDA_DIR = Path(__file__).resolve().parents[2] / "cuda"
# No fast math: divisions, square roots and exp round as torch's do. But CuPy appends -ftz=true to
# every NVRTC compile (cupy/cuda/compiler.py), so fp32 denormals (< 1.2e-38) flush to zero in our
# kernels where torch keeps them (the AWQ GEMM's SASS shows FFMA.FTZ; NOTES v93): results of normal
# size are unchanged, every kernel flushes alike (rows stay invariant), and a reference can differ
# only where a value falls below 1.2e-38.
OPTIONS = ("-std=c++17",)
_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.MULTILINE)


def source(name: str) -> str:
    """cuda/NAME.cu with our own headers inlined (each once)."""
    return inline_includes((CUDA_DIR / f"{name}.cu").read_text())


def inline_includes(code: str) -> str:
    """CUDA source with the `#include "x.cuh"` lines of cuda/'s headers replaced by their text, each
    header once (a probe's own source may include them too: paper_figures/edge_probe.py)."""
    seen: set[str] = set()

    def inline(match: re.Match) -> str:
        header = match.group(1)
        if header in seen:
            return ""
        seen.add(header)
        text = (CUDA_DIR / header).read_text().replace("#pragma once\n", "")  # inlined once already
        return _INCLUDE.sub(inline, text)

    return _INCLUDE.sub(inline, code)


def cuda_include() -> tuple[str, ...]:
    """-I for the toolkit's headers (cuda_bf16.h) where NVRTC does not find them built in."""
    for home in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "include" / "cuda_bf16.h").exists():
            return (f"-I{Path(home) / 'include'}",)
    return ()


def nvcc_command(source_file: str, cubin: str, arch: str = "sm_90a", *extra: str) -> list[str]:
    """nvcc's command line for a cubin of a source as the runtime builds it (OPTIONS and the CUDA
    headers), on a machine without a GPU: the compile checks and paper_figures/sass_mix.py."""
    return ["nvcc", *OPTIONS, *cuda_include(), f"-arch={arch}", "-cubin", *extra, "-o", cubin, source_file]


@functools.cache
def module(name: str, device: int):
    """cuda/NAME.cu built for `device`."""
    import cupy

    with cupy.cuda.Device(device):
        return compile_source(source(name))


def compile_source(code: str):
    """CUDA source (includes inlined, as source() gives it) built the runtime's way, for the current
    device: NVRTC with OPTIONS and the CUDA headers (paper_figures/attention_trace.py builds an
    instrumented copy of a kernel with it)."""
    import cupy

    return cupy.RawModule(code=code, options=OPTIONS + cuda_include(), backend="nvrtc")


_shared_limit: dict[tuple[str, str, int], int] = {}  # the dynamic shared memory a function may take


def function(name: str, kernel: str, device: int, shared_mem: int = 0):
    """The kernel, allowed at least `shared_mem` bytes of dynamic shared memory. Past 48 KB with its
    static shared memory a kernel must opt in, so every new high is set (the attention's static
    8 KB and 42 KB dynamic failed to launch without); the limit belongs to the one CUDA function,
    so it only ever rises."""
    fn = _function(name, kernel, device)
    key = (name, kernel, device)
    if shared_mem > _shared_limit.get(key, 0):
        fn.max_dynamic_shared_size_bytes = _shared_limit[key] = shared_mem
    return fn


@functools.cache
def _function(name: str, kernel: str, device: int):
    return module(name, device).get_function(kernel)


def launch(name: str, kernel: str, grid: tuple[int, ...], block: tuple[int, ...], args: tuple,
           shared_mem: int = 0, pdl: bool = True) -> None:
    """Launch `kernel` of cuda/NAME.cu on torch's current device and stream. args: pointers as
    ptr(tensor), scalars as numpy scalars of the kernel's parameter types (np.int32, np.float32).
    pdl: with programmatic dependent launch (the kernel must call common.cuh's pdl_start() before it
    touches what other kernels write); off everywhere when SWIFTSPEC_PDL=0 (for A/B timing)."""
    import cupy

    device = torch.cuda.current_device()
    fn = function(name, kernel, device, shared_mem)
    stream = torch.cuda.current_stream().cuda_stream
    with cupy.cuda.Device(device):
        launch_ex(getattr(fn, "kernel", fn).ptr, grid, block, args, shared_mem, stream, pdl and PDL)


PDL = os.environ.get("SWIFTSPEC_PDL", "1") != "0"
_CLUSTER_DIMENSION, _PROGRAMMATIC_STREAM_SERIALIZATION = 4, 6  # CUlaunchAttributeID (cuda.h)
# CUfunction_attribute (cuda.h), for set_function_attribute
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT = 8, 9
FUNC_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
_CTYPES = {np.uint64: ctypes.c_uint64, np.int64: ctypes.c_int64, np.uint32: ctypes.c_uint32,
           np.int32: ctypes.c_int32, np.float32: ctypes.c_float}


class _LaunchAttributeValue(ctypes.Union):  # CUlaunchAttributeValue: a 64-byte union
    _fields_ = [("pad", ctypes.c_char * 64), ("programmatic_stream_serialization", ctypes.c_int),
                ("cluster_dim", ctypes.c_uint * 3)]


class _LaunchAttribute(ctypes.Structure):  # CUlaunchAttribute: an id, padding to 8, the value
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _LaunchAttributeValue)]


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_mem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)),
                ("num_attrs", ctypes.c_uint)]


def launch_config(grid, block, shared_mem: int, stream: int, pdl: bool = True,
                  cluster: int | None = None) -> _LaunchConfig:
    """The launch configuration, with pdl the programmatic-stream-serialization attribute, and with
    a cluster the cluster-dimension one (clusters of `cluster` blocks along x, 1 included: the
    driver's occupancy query wants it said; a kernel built with cluster dimensions needs none). Its
    attribute array is kept alive on the returned object."""
    attrs = (_LaunchAttribute * 2)()
    attrs[0].id = _PROGRAMMATIC_STREAM_SERIALIZATION
    attrs[0].value.programmatic_stream_serialization = 1
    count = 1 if pdl else 0
    if cluster is not None:
        attrs[count].id = _CLUSTER_DIMENSION
        attrs[count].value.cluster_dim[:] = (cluster, 1, 1)
        count += 1
    g, b = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
    config = _LaunchConfig((ctypes.c_uint * 3)(*g), (ctypes.c_uint * 3)(*b), shared_mem, stream,
                           ctypes.cast(attrs, ctypes.POINTER(_LaunchAttribute)), count)
    config.keep = attrs
    return config


@functools.cache
def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuLaunchKernelEx.argtypes = [ctypes.POINTER(_LaunchConfig), ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    return lib


def launch_ex(function_ptr: int, grid, block, args, shared_mem: int, stream: int, pdl: bool,
              cluster: int | None = None) -> None:
    """cuLaunchKernelEx (CUDA 12+; every launch, so no CuPy stream wrapper is needed), with pdl the
    programmatic-stream-serialization attribute: the kernel may launch before the previous kernel
    on the stream ends (captured graphs keep it). A kernel built with cluster dimensions keeps them;
    `cluster` asks for clusters at launch (launch_config). launch() goes through it;
    paper_figures' probes launch their own compiled copies with it."""
    config = launch_config(grid, block, shared_mem, stream, pdl, cluster)
    # ctypes structures (tensor_map.TensorMap: 128 bytes) go by value as they are
    values = [a if isinstance(a, ctypes.Structure) else _CTYPES[type(a)](a.item()) for a in args]
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    err = _driver().cuLaunchKernelEx(ctypes.byref(config), ctypes.c_void_p(function_ptr), params, None)
    if err:
        raise RuntimeError(f"cuLaunchKernelEx failed with CUresult {err}")


def set_function_attribute(function_ptr: int, attribute: int, value: int) -> None:
    """cuFuncSetAttribute on a compiled kernel (FUNC_* above); RuntimeError where the driver refuses."""
    if _driver().cuFuncSetAttribute(ctypes.c_void_p(function_ptr), attribute, ctypes.c_int(value)):
        raise RuntimeError(f"cuFuncSetAttribute({attribute}, {value}) failed")


def ptr(t: torch.Tensor) -> np.uint64:
    """A tensor's device address as a kernel's pointer argument (8 bytes)."""
    return np.uint64(t.data_ptr())
