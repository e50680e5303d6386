// Shared by every kernel in cuda/: types and small device helpers.
// Compiled through CuPy's NVRTC (swiftspec_core/kernels/build.py inlines this header).
#pragma once
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

// 8 bf16 in one 16-byte access: the width every memory-bound kernel here loads with.
struct __align__(16) bf16x8 { __nv_bfloat162 h[4]; };

// Programmatic dependent launch (sm_90): build.py launches our kernels with it, so a kernel may
// start while the one before it on the stream still runs. pdl_wait() waits until that kernel has
// finished and its writes are visible (it returns at once without PDL); pdl_trigger() lets the
// next kernel start early (a kernel that never calls it lets it start at its end). Every kernel
// waits before it reads or writes anything another kernel touches; pdl_start() is the two at once.
// The bf16 GEMMs trigger only after their main loop: triggered at their start, the next kernel's
// blocks (the attention's: 32 K registers and ~60 KB of shared memory each) sat on the SMs
// through the whole GEMM; late, the 8B forward ran 80-105 us faster, the 1B 15-25 (NOTES v99).
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_start() {
  pdl_wait();
  pdl_trigger();
}

// SwiGLU on one element, as norm.cu's swiglu kernel computes it: silu in fp32 (x / (1 + expf(-x)),
// no fast math, as torch), times up, rounded once. The GEMM epilogues that fuse it (gemm_swiglu.cu,
// awq_gemm.cu) call it on the bf16 values their GEMM alone would have written.
__device__ __forceinline__ float silu_times_f32(bf16 gate, bf16 up) {  // before the rounding
  const float g = __bfloat162float(gate), u = __bfloat162float(up);
  return g / (1.f + expf(-g)) * u;
}
__device__ __forceinline__ bf16 silu_times(bf16 gate, bf16 up) { return __float2bfloat16_rn(silu_times_f32(gate, up)); }

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

__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{\n .reg .u64 t;\n cvta.to.shared.u64 t, %1;\n cvt.u32.u64 %0, t;\n}\n" : "=r"(a) : "l"(p));
  return a;
}

// 16 bytes of shared memory at a shared-window address (shared_address), as four words; volatile
// and a memory clobber, so that it stays after the waits for the copies that wrote it.
__device__ __forceinline__ uint4 load_shared16_at(unsigned address) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(address) : "memory");
  return v;
}

// Asynchronous global -> shared copy of 16 bytes, bypassing L1 (the GEMM's norm weights; the AWQ
// GEMM's codes, each read once by one warp, take copy16_streamed below: caching them in L1 would only
// evict x). (The L2::256B prefetch hint changed nothing: NOTES v35.)
__device__ __forceinline__ void copy16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}

// copy16 for bytes read once a forward (weights) under an evict-first L2 policy: a 70B layer streams
// ~440 MB through the 50 MB L2, and left as normal lines they evict what is read again (each kernel's
// code, the residual, the attention's partials), fetched from HBM once more every layer. The same
// bits; the 70B AWQ forward 12.67 -> 12.21 ms, the attention's tail 7.9 -> 5.6 us (NOTES v285).
__device__ __forceinline__ unsigned long long evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void copy16_streamed(unsigned dst, const void* src, unsigned long long policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "l"(policy)
               : "memory");
}

__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void copies_wait() {  // all but the newest N committed groups have landed
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
