// Dequantize 4-bit AWQ weights to a bf16 [N, K] nn.Linear weight, for prefills (whose F.linear takes
// the plain weight): out[n, k] = bf16_rn(float(q - zero) * float(scale)), the bits that
// swiftspec_core/models/awq.py dequantize(w, torch.bfloat16) computes in torch (fp32: the integer
// q - zero is exact, the product is rounded once in fp32, then once to bf16, round to nearest even;
// no fused multiply-add can form, there is no add). swiftspec_core/kernels/awq_dequantize.py
// launches it.
//
// Input: AutoAWQ's tensors in the tiled layout of models/awq.py (tile(), as cuda/awq_gemm.cu reads
// them): B = ceil(N / 64) tiles of 64 output columns, qweight int32 [B][K][8], qzeros int32
// [B][K/G][8], scales fp16 [B][K/G][64], zero-padded past N; nibble i of an int32 holds column
// 8c + ORDER[i], ORDER = (0, 2, 4, 6, 1, 3, 5, 7), so column 8c + j sits at bits 4 REVERSE(j), with
// REVERSE(j) = (j >> 1) | ((j & 1) << 2). G is a power of two >= 32 dividing K (group_shift = log2 G).
//
// Work: block (x, y) = 64 consecutive k (k0 = 64 x; the last piece holds 32 where K % 64 == 32: K is
// a multiple of 32, every k below K is written) of tile y. The tile's 64 code rows there are 2 KB in
// one piece: 128 threads copy them to shared memory with 16-byte loads, and the block's 256 threads
// then each decode one column's 8 consecutive k (an octet: one group, as G >= 32) and write them as
// one 16-byte store, in two passes of 32 columns. Warp w of a pass: columns 4w..4w+3 (one int32
// column c) x the 8 octets, so each store instruction writes 4 whole 128-byte pieces of out rows
// (where K % 64 == 0; 64-byte ones in the last piece otherwise). Columns >= N are not written.
#include <cuda_fp16.h>
#include "common.cuh"

#define DQ_ROWS 64     // k per block (awq_dequantize.py's ROWS)
#define DQ_THREADS 256  // awq_dequantize.py's THREADS

// Shared code row r (k0 + r) at word 8 r + 4 (r / 8): a warp's 8 lanes o reading rows 8 o + i (same
// i, same int32 column c) hit banks 4 o + 8 i + c mod 32, 8 different ones (the 4 columns of one c
// read the same word: a broadcast), and a row's two 16-byte halves stay 16-byte aligned.
__device__ __forceinline__ int code_word(int r) { return 8 * r + 4 * (r >> 3); }

__device__ __forceinline__ int nibble(unsigned word, int shift) { return (word >> shift) & 0xF; }

extern "C" __global__ void __launch_bounds__(DQ_THREADS) awq_dequantize(
    const int* __restrict__ qweight, const int* __restrict__ qzeros, const __half* __restrict__ scales,
    bf16* __restrict__ out, int n, int k, int group_shift) {
  __shared__ __align__(16) int codes[8 * DQ_ROWS + 4 * (DQ_ROWS / 8)];
  const int tile = blockIdx.y, t = threadIdx.x;
  const int k0 = blockIdx.x * DQ_ROWS;
  const int rows = min(DQ_ROWS, k - k0);  // 64, or 32 in the last piece where K % 64 == 32
  pdl_start();
  if (t < 2 * rows) {  // row t / 2, half t % 2 (int32 columns 4 h .. 4 h + 3)
    const int r = t >> 1, half = t & 1;
    const int4 v = *reinterpret_cast<const int4*>(qweight + ((size_t)tile * k + k0 + r) * 8 + 4 * half);
    *reinterpret_cast<int4*>(codes + code_word(r) + 4 * half) = v;
  }
  __syncthreads();
  const int octet = t & 7;
  if (8 * octet >= rows) return;  // past K in the last piece; no barrier follows
  const int kk = k0 + 8 * octet;
  const int groups = k >> group_shift;
  const size_t group_row = (size_t)tile * groups + (kk >> group_shift);  // [tile][group] of qzeros, scales
#pragma unroll
  for (int pass = 0; pass < 2; ++pass) {
    const int col = 32 * pass + (t >> 3);  // column of the tile
    const int column = 64 * tile + col;
    if (column >= n) return;  // the zero padding of the last tile; pass 1's columns are higher still
    const int c = col >> 3, j = col & 7;
    const int shift = 4 * ((j >> 1) | ((j & 1) << 2));
    const int zero = nibble((unsigned)qzeros[group_row * 8 + c], shift);
    const float scale = __half2float(scales[group_row * 64 + col]);
    unsigned pairs[4];  // bf16 k (low half) and k + 1 (high half): memory order
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int lo = nibble((unsigned)codes[code_word(8 * octet + 2 * i) + c], shift);
      const int hi = nibble((unsigned)codes[code_word(8 * octet + 2 * i + 1) + c], shift);
      const __nv_bfloat162 pair = __floats2bfloat162_rn((float)(lo - zero) * scale, (float)(hi - zero) * scale);
      pairs[i] = *reinterpret_cast<const unsigned*>(&pair);
    }
    *reinterpret_cast<uint4*>(out + (size_t)column * k + kk) = make_uint4(pairs[0], pairs[1], pairs[2], pairs[3]);
  }
}
