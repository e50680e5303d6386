// Row-invariant small-M GEMM on 4-bit AWQ weights: out[M, N] = x[M, K] @ W^T (+ bias[N]), where
// W[n, k] = (code[k, n] - zero[k / G, n]) * scale[k / G, n] in AutoAWQ's GEMM layout (qweight int32
// [K, N/8], qzeros int32 [K/G, N/8], scales fp16 [K/G, N]; swiftspec_core/models/awq.py). bf16 x and
// out, 1 <= M <= 16, fp32 accumulation, rounded once (swiftspec_core/kernels/awq_gemm.py launches it).
//
// The tensor-core instruction (mma m16n8k16) runs with the weights as A (16 output columns n as its
// rows) and x^T as B (8 rows of x as its columns): two mma's per step cover x rows 0..7 and 8..15,
// rows M..15 zeros (never loaded). An output element depends only on its own x row and the weight
// column, and which chunks, in which order, and how the warps' sums combine is decided by (N, K)
// alone (plan() in awq_gemm.py), never by M: a row's bits do not depend on M, its index or the
// other rows, as in gemm.cu.
//
// Dequantization, exact: the nibbles of a code pair become bf16 128 + q (0x4300 | q: bf16 holds the
// integers up to 256 exactly), minus 128 + zero in bf16 gives the integer q - zero exactly; the mma
// sums x * (q - zero) over a 32-wide chunk in fp32, and that chunk sum times the fp32 scale is added
// to the accumulator (a chunk lies in one group: G is a multiple of 32). So no weight is rounded:
// the weights are (q - zero) * scale in fp32, where awq_gemm_reference rounds them to bf16 first
// (the tolerance of the GPU test says how far apart that puts the two).
//
// Layout of the work:
//   block = S warps on 64 output columns (8 int32 of a qweight row); the S warps split K;
//   warp  = K chunks of 32, c = w, w + S, ... (interleaved), U chunks loaded at once, the next U
//           while the current ones compute;
//   lane (g, t) = (lane / 4, lane % 4): int32 column g of the block (columns 8g..8g+7) in qweight
//     rows c*32 + 8t .. + 7 (8 loads of 4 bytes; the 8 lanes of a t read 32 adjacent bytes), and
//     x rows g and g + 8 at k = c*32 + 8t (16 bytes each);
//   tile j (0..3) = the mma's 16 A rows: row g is output column 8g + 2j, row g + 8 column 8g + 2j + 1
//     (AutoAWQ's nibble order puts exactly that pair in nibbles j and j + 4 of an int32);
//   K inside a chunk is permuted alike for A and B as in gemm.cu: logical k {2t, 2t+1, 2t+8, 2t+9}
//     of lane (g, t) are physical k 8t..8t+3 for the first mma of a chunk, 8t+4..8t+7 for the second;
//   combine = each warp's fp32 accumulators to shared memory, summed over warps 0..S-1 in order.
#include <cuda_fp16.h>
#include "common.cuh"
#include "mma.cuh"

// Predicated loads: zeros where `ok` is false, one instruction, no branch (see gemm.cu).
__device__ __forceinline__ unsigned load4_stream(const int* p, bool ok) {  // read once: not in L1
  unsigned v;
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n"
               " @p ld.global.nc.L1::no_allocate.u32 %0, [%1];\n}\n"
               : "=r"(v) : "l"(p), "r"((int)ok));
  return v;
}

__device__ __forceinline__ unsigned load4(const int* p, bool ok) {
  unsigned v;
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n mov.b32 %0, 0;\n @p ld.global.nc.u32 %0, [%1];\n}\n"
               : "=r"(v) : "l"(p), "r"((int)ok));
  return v;
}

__device__ __forceinline__ uint4 load16(const void* p, bool ok) {
  uint4 v;
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
               " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
               " @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "r"((int)ok));
  return v;
}

// Nibbles j and j + 4 of `packed` as bf16x2 (128 + low nibble, 128 + high nibble): output columns
// 2j and 2j + 1 of the int32's 8 in AutoAWQ's order (ORDER = 0, 2, 4, 6, 1, 3, 5, 7).
__device__ __forceinline__ unsigned pair_plus_128(unsigned packed, int j) {
  unsigned v;
  // (packed >> 4j) & 0x000F000F | 0x43004300, as one lop3: (a & b) | c is immLut 0xEA.
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(v) : "r"(packed >> (4 * j)), "r"(0x000F000Fu), "r"(0x43004300u));
  return v;
}

__device__ __forceinline__ unsigned sub_bf16x2(unsigned a, unsigned b) {  // exact for these integers
  __nv_bfloat162 r = __hsub2(*reinterpret_cast<__nv_bfloat162*>(&a), *reinterpret_cast<__nv_bfloat162*>(&b));
  return *reinterpret_cast<unsigned*>(&r);
}

__device__ __forceinline__ unsigned low_halves(unsigned a, unsigned b) {  // (a.lo, b.lo)
  unsigned v;
  asm("prmt.b32 %0, %1, %2, 0x5410;\n" : "=r"(v) : "r"(a), "r"(b));
  return v;
}

__device__ __forceinline__ unsigned high_halves(unsigned a, unsigned b) {  // (a.hi, b.hi)
  unsigned v;
  asm("prmt.b32 %0, %1, %2, 0x7632;\n" : "=r"(v) : "r"(a), "r"(b));
  return v;
}

// One chunk's operands of a lane: 8 qweight rows, x rows g and g + 8, its group's zeros and scales.
struct Chunk {
  unsigned w[8], zeros;
  uint4 lo, hi, scales;  // scales: 8 fp16, output columns 8g..8g+7
};

template <int U>
__device__ __forceinline__ void awq_gemm_block(const bf16* __restrict__ x, const int* __restrict__ qweight,
                                               const int* __restrict__ qzeros, const __half* __restrict__ scales,
                                               const bf16* __restrict__ bias, bf16* __restrict__ out,
                                               int M, int N, int K, int G) {
  extern __shared__ float partial[];  // [S][32 accumulators][32 lanes]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int splits = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int n8 = N >> 3;                  // int32 columns of qweight
  const int col8 = blockIdx.x * 8 + g;    // this lane's int32 column: output columns 8 col8 .. + 7
  const bool n_ok = col8 < n8;
  const int chunks = K >> 5;              // K % G == 0 and G % 32 == 0 (checked in awq_gemm.py)
  const int* w_col = qweight + (n_ok ? col8 : 0) + (size_t)(t * 8) * n8;
  const bool lo_ok = g < M, hi_ok = g + 8 < M;
  const bf16* x_lo = x + (size_t)(lo_ok ? g : 0) * K + t * 8;
  const bf16* x_hi = x + (size_t)(hi_ok ? g + 8 : 0) * K + t * 8;

  auto load = [&](Chunk (&o)[U], int c0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = c0 + u * splits;
      const bool in_k = c < chunks;
      const int k = in_k ? c * 32 : 0;
      const int group = k / G;
#pragma unroll
      for (int i = 0; i < 8; ++i) o[u].w[i] = load4_stream(w_col + (size_t)(k + i) * n8, in_k && n_ok);
      o[u].lo = load16(x_lo + k, in_k && lo_ok);
      o[u].hi = load16(x_hi + k, in_k && hi_ok);
      o[u].zeros = load4(qzeros + (size_t)group * n8 + (n_ok ? col8 : 0), in_k && n_ok);
      o[u].scales = load16(scales + (size_t)group * N + (size_t)(n_ok ? col8 : 0) * 8, in_k && n_ok);
    }
  };

  float acc[4][2][4];  // [tile j][x rows 0..7 | 8..15][d fragment]
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int b = 0; b < 2; ++b) acc[j][b][0] = acc[j][b][1] = acc[j][b][2] = acc[j][b][3] = 0.f;

  Chunk cur[U], next[U];
  load(cur, warp);
  // c0 is warp-uniform: mma.sync always runs with all 32 lanes. A chunk past K loaded zeros (its
  // scales are 0 too): it adds 0 * 0, and which chunks exist depends on (K, S) only.
  for (int c0 = warp; c0 < chunks; c0 += splits * U) {
    load(next, c0 + splits * U);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Chunk& o = cur[u];
      const __half* s8 = reinterpret_cast<const __half*>(&o.scales);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned zero = pair_plus_128(o.zeros, j);
        unsigned d[8];  // d[i]: (q - z) of columns 8g+2j, 8g+2j+1 at physical k 8t + i
#pragma unroll
        for (int i = 0; i < 8; ++i) d[i] = sub_bf16x2(pair_plus_128(o.w[i], j), zero);
        float chunk[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        // First mma: physical k 8t..8t+3 (d[0..3], x .x .y); second: 8t+4..8t+7 (d[4..7], x .z .w).
        mma_16816(chunk[0], low_halves(d[0], d[1]), high_halves(d[0], d[1]), low_halves(d[2], d[3]),
                  high_halves(d[2], d[3]), o.lo.x, o.lo.y);
        mma_16816(chunk[0], low_halves(d[4], d[5]), high_halves(d[4], d[5]), low_halves(d[6], d[7]),
                  high_halves(d[6], d[7]), o.lo.z, o.lo.w);
        mma_16816(chunk[1], low_halves(d[0], d[1]), high_halves(d[0], d[1]), low_halves(d[2], d[3]),
                  high_halves(d[2], d[3]), o.hi.x, o.hi.y);
        mma_16816(chunk[1], low_halves(d[4], d[5]), high_halves(d[4], d[5]), low_halves(d[6], d[7]),
                  high_halves(d[6], d[7]), o.hi.z, o.hi.w);
        const float s_row_g = __half2float(s8[2 * j]), s_row_g8 = __half2float(s8[2 * j + 1]);
#pragma unroll
        for (int b = 0; b < 2; ++b) {  // d rows g (column 8g+2j) and g+8 (column 8g+2j+1)
          acc[j][b][0] = fmaf(s_row_g, chunk[b][0], acc[j][b][0]);
          acc[j][b][1] = fmaf(s_row_g, chunk[b][1], acc[j][b][1]);
          acc[j][b][2] = fmaf(s_row_g8, chunk[b][2], acc[j][b][2]);
          acc[j][b][3] = fmaf(s_row_g8, chunk[b][3], acc[j][b][3]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) cur[u] = next[u];
  }

#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int b = 0; b < 2; ++b)
#pragma unroll
      for (int r = 0; r < 4; ++r) partial[(warp * 32 + j * 8 + b * 4 + r) * 32 + lane] = acc[j][b][r];
  __syncthreads();

  // One thread per output element of the block: warps 0..S-1 added in order, then the bias, then
  // one rounding. e = (j * 8 + b * 4 + r) * 32 + lane, with lane and r as in the mma's d fragment.
  for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
    const int l = e & 31, j = e >> 8, b = (e >> 7) & 1, r = (e >> 5) & 3;
    const int col = (blockIdx.x * 8 + (l >> 2)) * 8 + 2 * j + (r >> 1);  // d row g or g + 8
    const int row = b * 8 + (l & 3) * 2 + (r & 1);                       // d column 2t or 2t + 1
    if (row < M && col < N) {
      float v = partial[e];
      for (int s = 1; s < splits; ++s) v += partial[s * 1024 + e];
      if (bias != nullptr) v += __bfloat162float(bias[col]);
      out[(size_t)row * N + col] = __float2bfloat16(v);  // round to nearest even, as torch does
    }
  }
}

// Up to 8 warps (256 threads) a block, two blocks an SM (at most 128 registers a lane: with U = 2
// ptxas took 175, one block an SM, and a 70B layer's 160 blocks ran in two waves on 132 SMs);
// shared memory S * 4 KB.
#define AWQ_GEMM_KERNEL(U)                                                                              \
  extern "C" __global__ void __launch_bounds__(256, 2) awq_gemm_u##U(                                       \
      const bf16* __restrict__ x, const int* __restrict__ qweight, const int* __restrict__ qzeros,       \
      const __half* __restrict__ scales, const bf16* __restrict__ bias, bf16* __restrict__ out, int M,   \
      int N, int K, int G) {                                                                             \
    awq_gemm_block<U>(x, qweight, qzeros, scales, bias, out, M, N, K, G);                                \
  }
AWQ_GEMM_KERNEL(1)
