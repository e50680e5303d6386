// Device helpers of the AWQ GEMM kernel (awq_gemm.cu): loads through L1 and from shared memory,
// the exact bf16 dequantization steps and the cluster combine's barrier and remote loads (its
// asynchronous copies are common.cuh's).
#pragma once
#include <cuda_fp16.h>
#include "common.cuh"

// 16 bytes through L1: ld.global.nc, for data no kernel writes while this one runs (x). Volatile,
// so that no load moves above pdl_start()'s wait for the kernel that writes x.
__device__ __forceinline__ uint4 load16_l1(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// 4 bytes of shared memory at a shared-window address. Volatile with a memory clobber: it must stay
// after the wait for the copies that wrote them.
__device__ __forceinline__ unsigned load_shared4(unsigned address) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(address) : "memory");
  return v;
}

// Nibble j of each half of `pair` (and what sits above it, masked off), as bf16x2 128 + nibble:
// (pair >> 4j) & 0x000F000F | 0x43004300, the last two as one lop3 (immLut 0xEA). The three
// shifts run on the integer pipe: j = 1 and 3 a SHF, j = 2 a byte permute (PRMT: pair >> 8). All
// three as IMADs (the high word of pair * 2^(32 - 4j)) kept FMA-heavy the busiest pipe (40% of
// cycles, two a warp instruction) and paced the kernel: j = 1 and 2 moved took 9% off the 70B
// gate_up and 5.5% off its AWQ forward (NOTES v91, v92), j = 3 ~1.3% more off the forward (v99);
// bitwise the same. (bf16's 7 mantissa bits cannot hold a nibble at bits 4..7: no fp16-style
// in-place mask and 1/16.)
__device__ __forceinline__ unsigned nibbles_plus_128(unsigned pair, int j) {
  unsigned shifted = pair, v;
  if (j == 1) asm("shr.b32 %0, %1, 4;\n" : "=r"(shifted) : "r"(pair));
  if (j == 2) asm("prmt.b32 %0, %1, 0, 0x4321;\n" : "=r"(shifted) : "r"(pair));  // pair >> 8
  if (j == 3) asm("shr.b32 %0, %1, 12;\n" : "=r"(shifted) : "r"(pair));
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(v) : "r"(shifted), "r"(0x000F000Fu), "r"(0x43004300u));
  return v;
}

// The fp16-operand kernels' (awq_gemm.cu, kF16): fp16's 10 mantissa bits hold a nibble in place at
// bits 0..3 (1024 + q, even j) and at bits 4..7 (1024 + 16 q, odd j), so a word's four tiles take
// four lop3's and one byte permute (the caller's pair >> 8 before j = 2) where bf16 takes four and
// three shifts.
__device__ __forceinline__ unsigned nibbles_fp16(unsigned pair, int j) {
  unsigned v;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(v) : "r"(pair), "r"(j & 1 ? 0x00F000F0u : 0x000F000Fu), "r"(0x64006400u));
  return v;
}

__device__ __forceinline__ unsigned permute(unsigned a, unsigned b, unsigned selector) {
  unsigned v;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(v) : "r"(a), "r"(b), "r"(selector));
  return v;
}

// Tile j's zero of A row g (z_g, the low half of `both`) and g + 8 (z_g8, the high half) as the
// codes' offset, exact in fp32: bf16 128 + zero; kF16: 1024 + c zero, as the sums saw 1024 + c q (c =
// 16 at odd j; awq_gemm.cu divides odd tiles' sums by 16 at the store). kInPlace (the r16 kernels, at
// their 80 registers, where the fp32 steps of the other form spilled in the g32 clusters): the fp16
// zero out of its nibbles as the codes come (both >> 8 in place at j = 2, so j runs 0..3 in order);
// else bf16 128 + zero adjusted in fp32 (at M <= 8 that form ran the 70B down 8% faster, NOTES v214).
template <bool kF16, bool kInPlace>
__device__ __forceinline__ void zero_offsets(unsigned& both, int j, float& z_g, float& z_g8) {
  if (kF16 && kInPlace) {
    if (j == 2) both = permute(both, 0u, 0x4321u);
    const unsigned zero_pair = nibbles_fp16(both, j);
    z_g = __half2float(__ushort_as_half((unsigned short)zero_pair));
    z_g8 = __half2float(__ushort_as_half((unsigned short)(zero_pair >> 16)));
    return;
  }
  const unsigned zero_pair = nibbles_plus_128(both, j);
  z_g = __uint_as_float(zero_pair << 16), z_g8 = __uint_as_float(zero_pair & 0xFFFF0000u);
  if (kF16 && (j & 1)) z_g = fmaf(16.f, z_g, -1024.f), z_g8 = fmaf(16.f, z_g8, -1024.f);
  if (kF16 && !(j & 1)) z_g += 896.f, z_g8 += 896.f;
}

// Every thread of the cluster arrives (with release semantics, the default), then waits for all
// (acquire, the default).
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive;\n barrier.cluster.wait;\n" ::: "memory");
}

// The float at shared address `address` of the cluster's block `rank`.
__device__ __forceinline__ float cluster_load(unsigned address, int rank) {
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(address), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
