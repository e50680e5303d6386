"""swiftspec_core.kernels.tensor_map on the CPU: the arguments cuTensorMapEncodeTiled gets for the
engine's KV cache (innermost first, byte strides), the shapes it would refuse, and build.launch_ex
passing a map by value (its 128 bytes, not a pointer). The encode itself runs on a GPU machine."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from swiftspec_core.kernels import build, tensor_map


def test_the_caches_map_is_innermost_first_in_bytes():
    layers, rows, kv, hd = 16, 1024, 8, 64  # cache.py's k: [L, rows, KV, HD]
    strides = (rows * kv * hd, kv * hd, hd, 1)
    dims, byte_strides, box = tensor_map.tensor_map_args((layers, rows, kv, hd), strides, (64, 1, 64, 1),
                                                         tensor_map.SWIZZLE_128B)
    assert dims == [hd, kv, rows, layers] and byte_strides == [hd * 2, kv * hd * 2, rows * kv * hd * 2]
    assert box == [64, 1, 64, 1]


@pytest.mark.parametrize("shape,strides,box,swizzle", [
    ((8, 64), (1, 8), (64, 8), tensor_map.SWIZZLE_NONE),  # innermost not contiguous
    ((8, 60), (60, 1), (60, 8), tensor_map.SWIZZLE_NONE),  # a 120-byte row stride
    ((8, 64), (64, 1), (64, 9), tensor_map.SWIZZLE_NONE),  # a box past its dim
    ((512, 64), (64, 1), (64, 257), tensor_map.SWIZZLE_NONE),  # a box side over 256
    ((8, 128), (128, 1), (128, 8), tensor_map.SWIZZLE_128B),  # a 256-byte swizzled row
    ((8, 64), (64, 1), (4, 8), tensor_map.SWIZZLE_NONE),  # an 8-byte box row
    ((8, 64), (64, 1), (64,), tensor_map.SWIZZLE_NONE),  # a box of the wrong rank
])
def test_what_the_driver_would_refuse_is_refused(shape, strides, box, swizzle):
    with pytest.raises(ValueError):
        tensor_map.tensor_map_args(shape, strides, box, swizzle)


def test_launch_ex_passes_a_map_by_value(monkeypatch):
    seen = {}

    class Driver:
        def cuLaunchKernelEx(self, config, function, params, extra):  # noqa: N802 (the driver's name)
            pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
            seen["scalar"] = ctypes.c_int32.from_address(pointers[0]).value
            seen["map"] = bytes((ctypes.c_uint8 * 128).from_address(pointers[1]))
            return 0

    monkeypatch.setattr(build, "_driver", lambda: Driver())
    tmap = tensor_map.TensorMap()
    tmap.opaque[:] = list(range(1, 17))
    build.launch_ex(0x1000, (1,), (32,), (np.int32(7), tmap), 0, 0, pdl=False)
    assert seen["scalar"] == 7 and seen["map"] == bytes(tmap)
