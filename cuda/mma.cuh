// The tensor-core instruction of the small-M GEMMs (gemm.cu, awq_gemm.cu) and the tree attention:
// d += A B for one 16 x 8 x 16 tile, bf16 operands, fp32 accumulators; the fragments of lane
// (g, t) = (lane / 4, lane % 4) are PTX's for mma.m16n8k16, as listed inside. Below it, the ways
// the attention fills fragment registers (32-bit loads, bf16 pairs, ldmatrix).
#pragma once
#include "common.cuh"

__device__ __forceinline__ void mma_16816(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                          unsigned a3, unsigned b0, unsigned b1) {
  // a0: (row g, k 2t..2t+1), a1: (row g+8, same k), a2: (row g, k 2t+8..), a3: (row g+8, k 2t+8..);
  // b0: (k 2t..2t+1, col g), b1: (k 2t+8.., col g); d: (row g, cols 2t, 2t+1), (row g+8, same cols).
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ unsigned ld32(const bf16 *p) { return *reinterpret_cast<const unsigned *>(p); }

// Two bf16 (a in the low half, b in the high), as a fragment register holds them.
__device__ __forceinline__ unsigned pack2(bf16 a, bf16 b) {
  return (unsigned)__bfloat16_as_ushort(a) | ((unsigned)__bfloat16_as_ushort(b) << 16);
}

__device__ __forceinline__ unsigned smem_addr(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// Four 8x8 bf16 matrices from shared memory (lane l gives the row address of matrix l / 8, row
// l % 8): r[i] of lane (g, t) = elements (g, 2t), (g, 2t + 1) of matrix i; .trans: (2t, g), (2t + 1, g).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const bf16 *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const bf16 *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(row)));
}
