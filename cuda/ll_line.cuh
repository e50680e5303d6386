// LL lines (cuda/allreduce.cu's header comment explains them): a 16-byte line of 8 data bytes,
// {data0, flag, data1, flag}, stored to a peer's inbox with one 16-byte volatile store, polled by
// the receiver until both flags show the call's epoch; and the fp32 sum of lines' elements.
// Shared by the kernels that exchange LL lines (allreduce.cu, gemm_allreduce.cu).
#pragma once
#include "common.cuh"

struct Line { unsigned int d0, flag0, d1, flag1; };  // 16 bytes: the unit of a peer store

__device__ __forceinline__ void store_line(Line* p, unsigned int d0, unsigned int d1, unsigned int flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "r"(d0), "r"(flag), "r"(d1), "r"(flag) : "memory");
}

__device__ __forceinline__ Line load_line(const Line* p) {
  Line v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.d0), "=r"(v.flag0), "=r"(v.d1), "=r"(v.flag1) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Wait for a peer's line of this epoch. A peer that never comes (it died, or called with another
// size) would hang the stream forever, graph replays included; after timeout_ns the kernel traps,
// so the process sees a CUDA error instead of a silent hang.
__device__ __forceinline__ Line wait_line(const Line* p, unsigned int epoch, unsigned long long timeout_ns) {
  Line v = load_line(p);
  if (v.flag0 == epoch && v.flag1 == epoch) return v;
  const unsigned long long start = global_ns();
  for (unsigned int spin = 1;; ++spin) {
    v = load_line(p);
    if (v.flag0 == epoch && v.flag1 == epoch) return v;
    if ((spin & 1023u) == 0 && global_ns() - start > timeout_ns) __trap();
  }
}

// A line as the elements it holds, summed in fp32: 4 bf16 (low half of each word first) or 2 fp32.
template <typename T> struct LineSum;

template <> struct LineSum<bf16> {
  float v[4];
  __device__ __forceinline__ void set(uint2 w) {
    v[0] = __uint_as_float(w.x << 16); v[1] = __uint_as_float(w.x & 0xffff0000u);
    v[2] = __uint_as_float(w.y << 16); v[3] = __uint_as_float(w.y & 0xffff0000u);
  }
  __device__ __forceinline__ void add(uint2 w) {
    v[0] += __uint_as_float(w.x << 16); v[1] += __uint_as_float(w.x & 0xffff0000u);
    v[2] += __uint_as_float(w.y << 16); v[3] += __uint_as_float(w.y & 0xffff0000u);
  }
  __device__ __forceinline__ uint2 get() const {
    unsigned int b[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = __bfloat16_as_ushort(__float2bfloat16_rn(v[j]));
    return make_uint2(b[0] | b[1] << 16, b[2] | b[3] << 16);
  }
};

template <> struct LineSum<float> {
  float v[2];
  __device__ __forceinline__ void set(uint2 w) { v[0] = __uint_as_float(w.x); v[1] = __uint_as_float(w.y); }
  __device__ __forceinline__ void add(uint2 w) { v[0] += __uint_as_float(w.x); v[1] += __uint_as_float(w.y); }
  __device__ __forceinline__ uint2 get() const { return make_uint2(__float_as_uint(v[0]), __float_as_uint(v[1])); }
};
