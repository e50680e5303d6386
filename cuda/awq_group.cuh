// A warp's group in the AWQ GEMM kernels (awq_gemm_block.cuh: one tile's groups a warp; awq_streamk.cuh:
// a contiguous range of (tile, group) units): its ring of copies, its chunks' mma's and the fold of
// zeros and scales into its accumulators in shared memory. awq_gemm.cu's header has the numerics.
#pragma once
#include <cuda_fp16.h>
#include "common.cuh"
#include "mma.cuh"
#include "awq_common.cuh"
#include "awq_lanes.cuh"

// A warp's ring: AWQ_STAGES stages of one chunk's codes (1 KB each; awq_gemm.py's STAGES), and as
// many meta slots of a group's scales (64 fp16) and zeros (8 int32): slot i % AWQ_STAGES holds the
// warp's i-th group's. (Group i + STAGES's first chunk is copied STAGES - 1 chunks ahead, so after
// group i's last chunk has been summed, whatever G / 32: its slot is free by then.)
#define AWQ_STAGES 4  // a power of two: chunk n's stage is n % STAGES
#define AWQ_STAGE_BYTES 1024
#define AWQ_META_BYTES 160
#define AWQ_RING_BYTES (AWQ_STAGES * (AWQ_STAGE_BYTES + AWQ_META_BYTES))
// The kernels' __launch_bounds__: S <= 24 warps a block (awq_gemm.py's SPLITS; 2 S for swiglu), and
// so a lane's registers: 65536 / 768 -> 80, which lets 24 warps share an SM (WARPS_PER_SM).
#define AWQ_THREADS 768

// A warp's accumulators in shared memory, [32 lanes][kPieces float4's] a warp: piece (j, b) holds d
// fragment registers r = 0..3 of tile j, x rows 8b .. 8b + 7. With rows 8..15 (kTwo) 8 pieces a lane,
// (j, b) at (2 j + b) ^ (lane % 8); else 4, j at j ^ (lane / 2 % 4): 2 KB a warp less shared
// memory, with which the driver picks a carveout one step smaller and every 70B GEMM ran 6-10%
// faster (NOTES v74, v79; why is open: x's L1 hit rate did not change). Either way a quarter
// warp's 16-byte accesses fall in 8 different 16-byte bank groups.
template <bool kTwo>
struct Accumulators {
  static constexpr int kPieces = kTwo ? 8 : 4;
  static __device__ __forceinline__ int piece(int j, int b, int lane) {
    return kPieces == 8 ? (2 * j + b) ^ (lane & 7) : j ^ ((lane >> 1) & 3);
  }
};

// The warp's i-th group (its chunks i kChunks .. + kChunks - 1 of `chunks`, in stages of the ring at
// ring_s, its meta in slot i % STAGES): the group's sums of x (128 + q) and of x, then its value
// added into the warp's accumulators `acc`. copy_chunk(p, ordinal, stage) copies the warp's next
// chunk (in-group index p, its group's place `ordinal` among the warp's); x_of(p, row) loads x row
// `row`'s 16 bytes of this group's chunk p (M > 8); load_x_next(p, v) the next chunk's x row g
// (M <= 8, a chunk ahead, into xs).
template <bool kTwo, int kChunks, bool kF16, class CopyChunk, class XOf, class LoadXNext>
__device__ __forceinline__ void sum_group(int i, int chunks, unsigned ring_s, const LaneConstants& c, uint4 (&xs)[2],
                                          float4* acc, int lane, CopyChunk&& copy_chunk, XOf&& x_of,
                                          LoadXNext&& load_x_next) {
  using Acc = Accumulators<kTwo>;
  auto stage_of = [&](int n) { return ring_s + (unsigned)(n & (AWQ_STAGES - 1)) * AWQ_STAGE_BYTES; };
  const unsigned meta_s = ring_s + AWQ_STAGES * AWQ_STAGE_BYTES;
  const int n0 = i * kChunks;
  // The group's sums of x (128 + q) (tile j, x rows 8b.., d fragment r) and of x alone (x rows
  // 8b + 2t + r % 2; the ones-mma's d registers 2, 3 repeat 0, 1), fp32, in mma accumulators.
  float sums[4][2][4], x_sums[2][4];
  if (kTwo) {  // zero here: its chunk loop is not unrolled (below), so no first mma without them
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      x_sums[b][0] = x_sums[b][1] = x_sums[b][2] = x_sums[b][3] = 0.f;
#pragma unroll
      for (int j = 0; j < 4; ++j) sums[j][b][0] = sums[j][b][1] = sums[j][b][2] = sums[j][b][3] = 0.f;
    }
  }
  // The group's chunks: unrolled at M <= 8 (stages, copy offsets and the x buffer known at compile
  // time); one at a time at M > 8, where unrolled ptxas overlaps chunks and spills at 80 registers.
#pragma unroll (kTwo ? 1 : kChunks)
  for (int p = 0; p < kChunks; ++p) {
    const int n = n0 + p;
    // x rows g (and g + 8) of chunk n: at M <= 8 loaded a chunk ahead; at M > 8 here (8 registers
    // more would spill at 80 a lane; the other warps of the SM cover the wait).
    const uint4 x_now = kTwo ? x_of(p, c.x_row) : xs[p & 1];
    const uint4 x_now8 = kTwo ? x_of(p, c.x_row8) : x_now;
    if (!kTwo && n + 1 < chunks)
      load_x_next((p + 1) % kChunks, xs[(p + 1) & 1]);
    copies_wait<AWQ_STAGES - 2>();
    __syncwarp();  // every lane's copies of chunk n visible; every lane done with chunk n - 1's stage
    // Chunk n + STAGES - 1 into chunk n - 1's stage.
    if (n + AWQ_STAGES - 1 < chunks)
      copy_chunk((p + AWQ_STAGES - 1) & (kChunks - 1), i + (p + AWQ_STAGES - 1) / kChunks, stage_of(n + AWQ_STAGES - 1));
    copies_commit();

#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // Matrix i of mma h's k pairs: i = 0: (pair m = 2h, half q = 0), 1: (2h, 1), 2: (2h + 1, 0),
      // 3: (2h + 1, 1): A registers a0, a1, a2, a3 of every tile, tile j's in nibble j.
      unsigned w[4];
      ldmatrix_trans(w, stage_of(n) + c.read + 512 * h);
      const unsigned b0 = h ? x_now.z : x_now.x, b1 = h ? x_now.w : x_now.y;
      const unsigned b8 = h ? x_now8.z : x_now8.x, b9 = h ? x_now8.w : x_now8.y;
      const bool first = !kTwo && p == 0 && h == 0;  // the group's first mma's: zero accumulators (RZ)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        unsigned a[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          if (kF16 && j == 2) w[r] = permute(w[r], 0u, 0x4321u);  // w >> 8: tiles 2, 3 at bits 0..7 (in place: no register more)
          a[r] = kF16 ? nibbles_fp16(w[r], j) : nibbles_plus_128(w[r], j);
        }
        if (first) mma_awq_zero<kF16>(sums[j][0], a[0], a[1], a[2], a[3], b0, b1);
        else mma_awq<kF16>(sums[j][0], a[0], a[1], a[2], a[3], b0, b1);
        if (kTwo) mma_awq<kF16>(sums[j][1], a[0], a[1], a[2], a[3], b8, b9);
      }
      constexpr unsigned ones = kOnes<kF16>;
      if (first) mma_awq_zero<kF16>(x_sums[0], ones, ones, ones, ones, b0, b1);
      else mma_awq<kF16>(x_sums[0], ones, ones, ones, ones, b0, b1);
      if (kTwo) mma_awq<kF16>(x_sums[1], ones, ones, ones, ones, b8, b9);
    }
  }
  if (!kTwo && kChunks % 2) xs[0] = xs[1];  // chunk n + 1's x row g, where the next group's first chunk reads it

  // The group's zeros and scales of this lane's int32 columns g / 2 and 4 + g / 2, from its meta
  // slot (landed with its first chunk). Its value of column c, x row r: sums - (128 + zero) x_sums
  // (one rounding), times the scale, added.
  const unsigned slot = meta_s + (unsigned)(i & (AWQ_STAGES - 1)) * AWQ_META_BYTES;
  // Scales: word j of this lane's 16 bytes (int32 column g / 2; + 64: 4 + g / 2) in tile j. At
  // M <= 8 the 8 words in two 16-byte loads (6 shared loads fewer a group; NOTES v99); at M > 8 a
  // word at a time (4 words live, not 8: r16_g32_c1 spilled at 80 registers with 16-byte reads).
  const unsigned scales = slot + 16 * (lane >> 3);
  uint4 sw = make_uint4(0u, 0u, 0u, 0u), sw8 = sw;
  if (!kTwo) sw = load_shared16_at(scales), sw8 = load_shared16_at(scales + 64);
  const unsigned scale_words[4] = {sw.x, sw.y, sw.z, sw.w}, scale_words8[4] = {sw8.x, sw8.y, sw8.z, sw8.w};
  const unsigned zeros_lo = load_shared4(slot + 128 + 4 * (lane >> 3));
  const unsigned zeros_hi = load_shared4(slot + 144 + 4 * (lane >> 3));
  const unsigned half_shift = 16u * ((lane >> 2) & 1);  // half g % 2 of a word
  unsigned both = permute(zeros_lo, zeros_hi, (lane >> 2) & 1 ? 0x7632u : 0x5410u);  // halves g % 2
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const unsigned word = kTwo ? load_shared4(scales + 4 * j) : scale_words[j];
    const unsigned word8 = kTwo ? load_shared4(scales + 64 + 4 * j) : scale_words8[j];
    const float s_g = scale_of(word, half_shift), s_g8 = scale_of(word8, half_shift);
    float z_g, z_g8;  // A row g's and g + 8's zero as the sums saw the codes (zero_offsets)
    zero_offsets<kF16, kTwo>(both, j, z_g, z_g8);
#pragma unroll
    for (int b = 0; b < (kTwo ? 2 : 1); ++b) {
      float4& a = acc[Acc::piece(j, b, lane)];
      float4 v = a;
      v.x = fmaf(s_g, fmaf(-z_g, x_sums[b][0], sums[j][b][0]), v.x);
      v.y = fmaf(s_g, fmaf(-z_g, x_sums[b][1], sums[j][b][1]), v.y);
      v.z = fmaf(s_g8, fmaf(-z_g8, x_sums[b][0], sums[j][b][2]), v.z);
      v.w = fmaf(s_g8, fmaf(-z_g8, x_sums[b][1], sums[j][b][3]), v.w);
      a = v;
    }
  }
}

// A lane's LaneConstants, through shared memory (`ring`, before its first copy) once before the loop,
// as in version 2: values ptxas can derive from the thread index it recomputes inside the loop.
__device__ __forceinline__ LaneConstants lane_constants_once(unsigned char* ring, int lane, int M, int K) {
  LaneConstants* slot = reinterpret_cast<LaneConstants*>(ring) + lane;
  *slot = lane_constants(lane, M, K);
  __syncwarp();
  const LaneConstants c = *slot;
  __syncwarp();
  return c;
}

// The RMSNorm before this GEMM (x is h * g / x_unit, rounded), where norms.row_sums is set: row m's
// r = 1 / sqrt(mean(h^2) + eps), times x_unit (exact: a power of two), into row_scale[m] (shared),
// from the K / 64 tiles' sums of h^2 the GEMM before wrote, added in a fixed order (lane l: tiles l,
// l + 32, .., then the butterfly), so a row's r depends on its own h alone. The whole block calls it.
__device__ __forceinline__ void norm_row_scales(const Norms& norms, int M, int K, float* row_scale) {
  if (norms.row_sums == nullptr) return;
  const unsigned tid = thread_index();
#pragma unroll 1
  for (int m = tid >> 5; m < M; m += blockDim.x >> 5) {
    float total = 0.f;
#pragma unroll 1
    for (int t = tid & 31; t < K / 64; t += 32) total += norms.row_sums[t * 16 + m];
    total = warp_sum(total);
    if ((tid & 31) == 0) row_scale[m] = norms.x_unit / sqrtf(total / (float)K + norms.eps);  // IEEE, as norm.cu
  }
  __syncthreads();
}

// The next RMSNorm's sums of a stored tile (col_block): its out^2 by row and column in `squares`
// ([16][64], store_output's), each row's summed in column order into next_sums[col_block][row].
__device__ __forceinline__ void store_next_sums(const float* squares, float* next_sums, int M, int N, int col_block) {
  const unsigned tid = thread_index();
  if (tid < M) {
    float total = 0.f;
    for (int c = 0; c < min(64, N - col_block * 64); ++c) total += squares[tid * 64 + c];
    next_sums[col_block * 16 + tid] = total;
  }
}
