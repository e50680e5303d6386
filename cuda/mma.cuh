// The tensor-core instruction of the small-M GEMMs (gemm.cu, awq_gemm.cu): d += A B for one
// 16 x 8 x 16 tile, bf16 operands, fp32 accumulators; the fragments of lane (g, t) = (lane / 4,
// lane % 4) are PTX's for mma.m16n8k16, as listed inside.
#pragma once

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
