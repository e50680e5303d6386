"""TMA tensor maps (Hopper's tiled bulk tensor copies): the driver's cuTensorMapEncodeTiled for a
bf16 tensor, the 128-byte map a kernel takes as a __grid_constant__ parameter (build.launch_ex
passes a TensorMap by value). tensor_map_args checks and orders the arguments on any machine;
tiled() encodes on a GPU machine."""
from __future__ import annotations

import ctypes

import torch

from .build import _driver

BF16 = 9  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 (cuda.h)
SWIZZLE_NONE, SWIZZLE_128B = 0, 3  # CUtensorMapSwizzle
_L2_PROMOTION_128B = 2  # CUtensorMapL2promotion: sectors fetched 128 bytes at a time
_INTERLEAVE_NONE, _OOB_ZERO = 0, 0  # boxes past the tensor's end land as zeros


class TensorMap(ctypes.Structure):
    """CUtensorMap: 128 opaque bytes (the driver writes them at a 64-byte aligned address)."""
    _fields_ = [("opaque", ctypes.c_uint64 * 16)]


def tensor_map_args(shape: tuple[int, ...], strides: tuple[int, ...], box: tuple[int, ...],
                    swizzle: int, element_bytes: int = 2) -> tuple[list[int], list[int], list[int]]:
    """(dims, byte strides of dims 1.., box), innermost first, of a tensor of `shape` and element
    `strides` (torch's order: outermost first) and a box given innermost first; ValueError where
    the driver would refuse: the innermost dim not contiguous, a stride not a multiple of 16 bytes,
    a box side outside 1..256 or past its dim, a swizzled box row wider than the swizzle (128 bytes)."""
    dims, elem_strides = list(shape[::-1]), list(strides[::-1])
    if len(box) != len(dims) or not 1 <= len(dims) <= 5:
        raise ValueError(f"a box of {len(box)} sides for a tensor of {len(dims)} dims (1..5)")
    if elem_strides[0] != 1:
        raise ValueError(f"the innermost dim must be contiguous (stride {elem_strides[0]})")
    byte_strides = [s * element_bytes for s in elem_strides[1:]]
    if any(s % 16 for s in byte_strides):
        raise ValueError(f"byte strides {byte_strides} must be multiples of 16")
    if any(not 1 <= b <= min(256, d) for b, d in zip(box, dims)):
        raise ValueError(f"box {list(box)} must be 1..256 a side and within dims {dims}")
    if box[0] * element_bytes % 16 or (swizzle == SWIZZLE_128B and box[0] * element_bytes > 128):
        raise ValueError(f"a box row of {box[0] * element_bytes} bytes: a multiple of 16, at most 128 swizzled")
    return dims, byte_strides, list(box)


def tiled(t: torch.Tensor, box: tuple[int, ...], swizzle: int = SWIZZLE_128B) -> TensorMap:
    """The tensor map of bf16 tensor t (on the GPU) with boxes of `box` (innermost first)."""
    if t.dtype != torch.bfloat16 or not t.is_cuda or t.data_ptr() % 16:
        raise ValueError("a tensor map takes a 16-byte aligned bf16 tensor on the GPU")
    dims, strides, box = tensor_map_args(tuple(t.shape), tuple(t.stride()), box, swizzle)
    rank = len(dims)
    storage = (ctypes.c_uint8 * (ctypes.sizeof(TensorMap) + 64))()
    tmap = TensorMap.from_address((ctypes.addressof(storage) + 63) & ~63)
    tmap.storage = storage  # the map lives in it
    err = _driver().cuTensorMapEncodeTiled(
        ctypes.byref(tmap), ctypes.c_int(BF16), ctypes.c_uint32(rank), ctypes.c_void_p(t.data_ptr()),
        (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * max(rank - 1, 1))(*strides),
        (ctypes.c_uint32 * rank)(*box), (ctypes.c_uint32 * rank)(*[1] * rank), ctypes.c_int(_INTERLEAVE_NONE),
        ctypes.c_int(swizzle), ctypes.c_int(_L2_PROMOTION_128B), ctypes.c_int(_OOB_ZERO))
    if err:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed with CUresult {err}")
    return tmap
