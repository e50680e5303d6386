// Shared by every kernel in cuda/: types and small device helpers.
// Compiled through CuPy's NVRTC (swiftspec_core/kernels/build.py inlines this header).
#pragma once
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

// 8 bf16 in one 16-byte access: the width every memory-bound kernel here loads with.
struct __align__(16) bf16x8 { __nv_bfloat162 h[4]; };

__device__ __forceinline__ float warp_sum(float v) {
  // Butterfly over the 32 lanes: a fixed order, so every lane gets the same bits every time.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
