"""Fused residual add + RMSNorm, the final RMSNorm and SwiGLU (cuda/norm.cu), each with its torch
reference beside it.

The kernels take bf16 and compute in fp32, rounding each output once. The references compute the
same formulas in fp32 (or wider) on any device and take the same arguments, so either set can stand
in for the other. A norm row's bits depend only on the row and D (the kernel's launch shape and
reduction order are picked from D alone), never on how many rows share the call or where the row
sits; SwiGLU is elementwise.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from . import build

MAX_THREADS = 1024
CHUNKS_PER_THREAD = (1, 2, 4)  # the instantiations in cuda/norm.cu (add_rmsnorm_c1, ...)
SWIGLU_THREADS = 256


def norm_launch(dim: int) -> tuple[int, int]:
    """(threads per block, 16-byte chunks per thread) for a norm row of `dim` bf16: the fewest
    chunks per thread that fit 1024 threads, threads rounded up to whole warps. Depends on dim only:
    that is what keeps a row's reduction order independent of the rows beside it."""
    n_chunks = dim // 8
    for per_thread in CHUNKS_PER_THREAD:
        threads = -(-n_chunks // per_thread)
        if threads <= MAX_THREADS:
            return -(-threads // 32) * 32, per_thread
    raise ValueError(f"rmsnorm: dim {dim} is above the kernel's {8 * MAX_THREADS * CHUNKS_PER_THREAD[-1]}")


# --- references (torch, any device, any float dtype) ---

def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)  # fp32 for bf16/fp16, fp64 stays fp64


def _written(result: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return result
    out.copy_(result)
    return out


def rmsnorm_reference(x: Tensor, weight: Tensor, eps: float, out: Tensor | None = None) -> Tensor:
    """x * rsqrt(mean(x^2) + eps) * weight over the last dim, in fp32, rounded once to x's dtype."""
    xf = x.to(_compute_dtype(x.dtype))
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return _written((xf * r * weight.to(xf.dtype)).to(x.dtype), out)


def add_rmsnorm_reference(h: Tensor, m: Tensor, weight: Tensor, eps: float, x_out: Tensor | None = None,
                          y_out: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """x = h + m (torch's add: one rounding to the dtype); y = rmsnorm(x). -> (x, y)."""
    x = _written(h + m, x_out)
    return x, rmsnorm_reference(x, weight, eps, y_out)


def swiglu_reference(gate_up: Tensor, out: Tensor | None = None) -> Tensor:
    """gate_up: [..., 2F] (gate first, up last, as .chunk(2, -1)) -> silu(gate) * up in fp32,
    rounded once: [..., F]."""
    gate, up = gate_up.to(_compute_dtype(gate_up.dtype)).chunk(2, dim=-1)
    return _written((torch.nn.functional.silu(gate) * up).to(gate_up.dtype), out)


# --- kernels ---

def _check(op: str, t: Tensor, name: str, shape: tuple[int, ...], device: torch.device) -> None:
    """bf16, contiguous, this shape, on `device`, 16-byte aligned: what the kernel's loads need."""
    if t.dtype != torch.bfloat16:
        raise ValueError(f"{op}: {name} is {t.dtype}; the kernel takes bfloat16")
    if tuple(t.shape) != shape:
        raise ValueError(f"{op}: {name} has shape {tuple(t.shape)}, expected {shape}")
    if not t.is_contiguous():
        raise ValueError(f"{op}: {name} is not contiguous")
    if t.device != device:
        raise ValueError(f"{op}: {name} is on {t.device}, expected {device}")
    if t.data_ptr() % 16:
        raise ValueError(f"{op}: {name} is not 16-byte aligned (the kernel loads 8 bf16 at once)")


def _check_norm(op: str, x: Tensor, weight: Tensor, tensors: dict[str, Tensor]) -> tuple[int, int]:
    """-> (rows, dim) of x [..., dim]. Every check a CPU can make comes first (dim a multiple of 8
    the kernel covers, each of `tensors` shaped as x, weight [dim]); then that x is on a GPU."""
    dim = x.shape[-1] if x.dim() else 0
    if x.dim() < 1 or dim % 8 or dim == 0:
        raise ValueError(f"{op}: the last dim of {tuple(x.shape)} must be a positive multiple of 8")
    norm_launch(dim)
    for name, t in tensors.items():
        _check(op, t, name, tuple(x.shape), x.device)
    _check(op, weight, "weight", (dim,), x.device)
    _need_cuda(op, x)
    return x.numel() // dim, dim


def _need_cuda(op: str, t: Tensor) -> None:
    if t.device.type != "cuda":
        raise ValueError(f"{op}: the fused kernel needs CUDA tensors, got {t.device}")


def _launch_norm(kernel: str, rows: int, dim: int, device: torch.device, args: tuple) -> None:
    if rows == 0:
        return
    threads, per_thread = norm_launch(dim)
    with torch.cuda.device(device):
        build.launch("norm", f"{kernel}_c{per_thread}", (rows,), (threads,), args)


def add_rmsnorm(h: Tensor, m: Tensor, weight: Tensor, eps: float, x_out: Tensor | None = None,
                y_out: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """h, m: [T, D] bf16 (any leading dims); weight: [D] bf16. x = h + m (one bf16 rounding, as
    torch's bf16 add); y = x * rsqrt(mean(x^2) + eps) * weight in fp32, rounded once.
    -> (x, y), written to x_out / y_out when given (x_out may be h and y_out may be m: each element
    is read before it is written, by the same thread). m may be all zeros (the first layer)."""
    x_out = torch.empty_like(h) if x_out is None else x_out
    y_out = torch.empty_like(h) if y_out is None else y_out
    rows, dim = _check_norm("add_rmsnorm", h, weight, {"h": h, "m": m, "x_out": x_out, "y_out": y_out})
    _launch_norm("add_rmsnorm", rows, dim, h.device,
                 (build.ptr(h), build.ptr(m), build.ptr(weight), build.ptr(x_out), build.ptr(y_out),
                  np.int32(dim // 8), np.float32(eps)))
    return x_out, y_out


def rmsnorm(x: Tensor, weight: Tensor, eps: float, out: Tensor | None = None) -> Tensor:
    """x: [T, D] bf16 -> x * rsqrt(mean(x^2) + eps) * weight in fp32, rounded once (the final norm).
    out may be x."""
    out = torch.empty_like(x) if out is None else out
    rows, dim = _check_norm("rmsnorm", x, weight, {"x": x, "out": out})
    _launch_norm("rmsnorm", rows, dim, x.device,
                 (build.ptr(x), build.ptr(weight), build.ptr(out), np.int32(dim // 8), np.float32(eps)))
    return out


def swiglu(gate_up: Tensor, out: Tensor | None = None) -> Tensor:
    """gate_up: [T, 2F] bf16 (gate = first F columns, up = last F, as .chunk(2, -1));
    -> silu(gate) * up in fp32, rounded once: [T, F]. out must not overlap gate_up."""
    two_f = gate_up.shape[-1] if gate_up.dim() else 0
    if gate_up.dim() < 1 or two_f % 16 or two_f == 0:
        raise ValueError(f"swiglu: the last dim of {tuple(gate_up.shape)} must be 2F with F a positive multiple of 8")
    shape = (*gate_up.shape[:-1], two_f // 2)
    out = gate_up.new_empty(shape) if out is None else out
    _check("swiglu", gate_up, "gate_up", tuple(gate_up.shape), gate_up.device)
    _check("swiglu", out, "out", shape, gate_up.device)
    _need_cuda("swiglu", gate_up)
    rows, f_chunks = gate_up.numel() // two_f, two_f // 16
    n_threads = rows * f_chunks
    if n_threads:
        with torch.cuda.device(gate_up.device):
            build.launch("norm", "swiglu", (-(-n_threads // SWIGLU_THREADS),), (SWIGLU_THREADS,),
                         (build.ptr(gate_up), build.ptr(out), np.int32(rows), np.int32(f_chunks)))
    return out
