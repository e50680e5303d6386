// The AWQ GEMM's lanes (awq_gemm.cu): where a chunk's code rows sit in a warp's stage and what each
// lane copies, reads by ldmatrix and loads of x; the scales' fp16 halves; the output's place of
// each accumulator and what the epilogue folds in (the RMSNorms of awq_norms.py); the mma's with
// all-ones or zero operands.
#pragma once
#include <cuda_fp16.h>
#include "common.cuh"
#include "mma.cuh"

// Where chunk row r (k within the chunk) sits in a stage: r = 8t + 2m + e goes to stage row
// 8m + 2t + e, so that an 8 x 8 ldmatrix of stage rows 8m .. 8m + 7, transposed, gives lane (g, t)
// the 16-bit column g of chunk rows 8t + 2m (low half) and 8t + 2m + 1 (high half).
__device__ __forceinline__ int stage_row(int r) { return 8 * ((r >> 1) & 3) + 2 * (r >> 3) + (r & 1); }

// A stage row's 16-byte half q (int32 columns 4q .. 4q + 3) at byte 32 row + 16 (q ^ bit 2 of row):
// the 8 rows one ldmatrix reads (32 bytes apart) then fall in 8 different 4-bank groups.
__device__ __forceinline__ unsigned stage_offset(int row, int q) { return 32 * row + 16 * (q ^ ((row >> 2) & 1)); }

// stage_offset(stage_row(r + 16), q) from stage_offset(stage_row(r), q), r < 16: stage_row(r + 16) =
// stage_row(r) + 4, which flips the row's bit 2 and so the half (bit 4 of the offset, clear in 32
// (row + 4)). One register fewer than a second lane constant (r16_g32_c1 spilled 16 bytes at 80).
__device__ __forceinline__ unsigned copy_dst16(unsigned copy_dst) { return (copy_dst + 128) ^ 16; }

// Four transposed 8 x 8 matrices of 16-bit elements: lanes 8i .. 8i + 7 give the row addresses of
// matrix i, and lane (g, t) receives its rows 2t (low half) and 2t + 1 (high half) of column g, in
// register i. Volatile with a memory clobber: it must stay after the wait for the copies it reads.
__device__ __forceinline__ void ldmatrix_trans(unsigned (&r)[4], unsigned address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
}

// A lane's loop-invariant offsets, in bytes. They go through shared memory once before the loop (as
// in version 2: values ptxas can derive from the thread index it recomputes inside the loop).
struct LaneConstants {
  unsigned copy_src;    // 16 lane: this lane's two 16-byte copies are bytes copy_src and copy_src + 512
  unsigned copy_dst;    // their stage offsets: chunk row lane / 2 here, row lane / 2 + 16 at copy_dst16()
  unsigned read;        // ldmatrix row address of this lane in a stage (k pairs m = 0, 1; m = 2, 3: + 512)
  unsigned x_row;       // from x to row g at k 8t (row 0 where g >= M)
  unsigned x_row8;      // the same for row g + 8
};

// The two the copies take: at M <= 8 the kernel's first copies go out with these alone (NOTES v270).
__device__ __forceinline__ void copy_constants(LaneConstants& c, int lane) {
  c.copy_src = 16u * lane;
  c.copy_dst = stage_offset(stage_row(lane >> 1), lane & 1);
}

__device__ __forceinline__ LaneConstants lane_constants(int lane, int M, int K) {
  LaneConstants c;
  copy_constants(c, lane);
  const int matrix = lane >> 3;  // ldmatrix: k pair m = matrix / 2 (+ 2 in the second), half q = matrix % 2
  c.read = stage_offset(8 * (matrix >> 1) + (lane & 7), matrix & 1);
  const int g = lane >> 2, t = lane & 3;
  c.x_row = 2u * ((g < M ? g : 0) * (unsigned)K + 8 * t);
  c.x_row8 = 2u * ((g + 8 < M ? g + 8 : 0) * (unsigned)K + 8 * t);
  return c;
}

// fp16 scale in half g % 2 (half_shift = 16 (g % 2)) of a word of scales, as fp32.
__device__ __forceinline__ float scale_of(unsigned word, unsigned half_shift) {
  return __half2float(__ushort_as_half((unsigned short)(word >> half_shift)));
}

// The thread's index, read again where asm volatile keeps it out of registers before (the r16
// kernels sit at their 80-register cap through the loop and spilled for a kept one).
__device__ __forceinline__ unsigned thread_index() {
  unsigned t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

// Which outputs are fp16 (the next GEMM's x in its fp16-operand kernel), not bf16: bit 0 awq_swiglu's
// out, bit 1 next_x.
constexpr int kHalfOut = 1, kHalfNextX = 2;

// The RMSNorms folded into a GEMM's epilogue (awq_norms.py; all null: a plain GEMM): row_sums
// [K / 64][16] with eps, the norm before (x is h * g / x_unit, rounded to x's dtype: r is scaled by
// x_unit); residual [M, N] (out may be it); next_norm [N] with next_x [M, N] (out * g * next_x_scale,
// rounded) and next_sums [N / 64][16], the norm after (kCluster = 1 only). x_unit and 1 / next_x_scale
// are powers of two (awq_norms.NextNorm.unit: fp16's headroom for h * g), so they move no bit but
// where an fp16 x would saturate or fall to a subnormal.
struct Norms {
  const float* row_sums;
  const bf16* residual;
  const bf16* next_norm;
  void* next_x;
  float* next_sums;
  float eps;
  float x_unit;
  float next_x_scale;
  int half_out;  // kHalfOut | kHalfNextX: which outputs are fp16
};

// fp32 -> fp16, rounded to nearest even, saturating at fp16's largest finite value (65504) where bf16
// would hold it (NaN stays NaN): awq_gemm.py's to_operand.
__device__ __forceinline__ __half half_saturated(float v) {
  return __float2half_rn(fabsf(v) > 65504.f ? copysignf(65504.f, v) : v);
}

// An output element in bf16, or in fp16 (saturating) where `half`.
__device__ __forceinline__ void store_operand(void* out, size_t at, float v, bool half) {
  if (half) reinterpret_cast<__half*>(out)[at] = half_saturated(v);
  else reinterpret_cast<bf16*>(out)[at] = __float2bfloat16_rn(v);
}

// What a GEMM's epilogue does besides out = sum + bias (awq_norms.py: the RMSNorms of a one-GPU
// forward folded into the GEMMs around them, NOTES v110). Null pointers: not that step.
struct Epilogue {
  const float* row_scale;  // shared [16]: r x_unit of each row, the RMSNorm before this GEMM (x = h g / x_unit)
  const bf16* residual;    // [M, N]: out = residual + bf16(r sum + bias), torch's bf16 add (out may be it)
  const bf16* next_norm;   // [N]: the next RMSNorm's weight g: next_x = out * g * next_x_scale, and out^2 into
  void* next_x;            //   [M, N] (fp16 where half_out has kHalfNextX), rounded once
  float* squares;          //   shared [16][64], by row and column within the tile
  int half_out;            // kHalfOut | kHalfNextX: which outputs are fp16
  float next_x_scale;      // a power of two (Norms)
};

// Element e of a block's [32 accumulators][32 lanes] sums (see the combine), rounded once into out
// where its row and column exist. e = (8 j + 4 b + r) 32 + lane: tile j, x rows 8b .. 8b + 7, d
// fragment register r (A row g (r < 2) or g + 8, B column 2t + r % 2). v: the element's sum;
// kSwiglu: its gate column's sum and its up column's, out [M, N / 2] (bf16, or fp16 under
// kHalfOut). kF16: odd tiles' sums are 16 times their value (awq_gemm.cu's fold). The sum times the
// row's scale (ep.row_scale) plus the bias, rounded once; then ep's residual and next norm.
template <bool kSwiglu, bool kF16>
__device__ __forceinline__ void store_output(const float (&sums)[kSwiglu ? 2 : 1], int e, int col_block,
                                             const bf16* __restrict__ bias, bf16* out, int M, int N,
                                             const Epilogue& ep) {
  const int l = e & 31, j = e >> 8, b = (e >> 7) & 1, r = (e >> 5) & 3;
  const float unit = kF16 && (j & 1) ? 0.0625f : 1.f;  // exact
  float v[kSwiglu ? 2 : 1];
#pragma unroll
  for (int h = 0; h < (kSwiglu ? 2 : 1); ++h) v[h] = sums[h] * unit;
  const int g = l >> 2;
  const int col = col_block * 64 + 32 * (r >> 1) + 8 * (g >> 1) + 2 * j + (g & 1);
  const int row = b * 8 + (l & 3) * 2 + (r & 1);
  const int cols = kSwiglu ? N / 2 : N;
  if (row >= M || col >= cols) return;
  const float scale = ep.row_scale != nullptr ? ep.row_scale[row] : 1.f;
  if (kSwiglu) {  // each factor rounded as awq_gemm writes it (round to nearest even, as torch)
    store_operand(out, (size_t)row * cols + col,
                  silu_times_f32(__float2bfloat16(v[0] * scale), __float2bfloat16(v[1] * scale)), ep.half_out & kHalfOut);
    return;
  }
  const float sum = ep.row_scale != nullptr ? v[0] * scale : v[0];
  bf16 y = __float2bfloat16(bias != nullptr ? sum + __bfloat162float(bias[col]) : sum);
  const size_t at = (size_t)row * cols + col;
  if (ep.residual != nullptr) y = __float2bfloat16(__bfloat162float(ep.residual[at]) + __bfloat162float(y));
  out[at] = y;
  if (ep.next_norm != nullptr) {
    const float f = __bfloat162float(y);
    store_operand(ep.next_x, at, f * __bfloat162float(ep.next_norm[col]) * ep.next_x_scale, ep.half_out & kHalfNextX);
    ep.squares[row * 64 + (col - col_block * 64)] = f * f;
  }
}

// (1, 1) in the operand type (fp16 where kF16, else bf16): the A operand of the mma's that sum x alone.
template <bool kF16>
constexpr unsigned kOnes = kF16 ? 0x3C003C00u : 0x3F803F80u;

// d += A B with fp16 (kF16) or bf16 operands, fp32 accumulators.
template <bool kF16>
__device__ __forceinline__ void mma_awq(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                        unsigned b0, unsigned b1) {
  if constexpr (kF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    mma_16816(d, a0, a1, a2, a3, b0, b1);
  }
}

// d = A B (+ nothing): the first mma of a group's sums, its accumulators zero (RZ in the SASS).
template <bool kF16>
__device__ __forceinline__ void mma_awq_zero(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1) {
  d[0] = d[1] = d[2] = d[3] = 0.f;
  mma_awq<kF16>(d, a0, a1, a2, a3, b0, b1);
}
