// Row-invariant small-M GEMM on 4-bit AWQ weights: out[M, N] = x[M, K] @ W^T (+ bias[N]), where
// W[n, k] = (code[k, n] - zero[k / G, n]) * scale[k / G, n], AutoAWQ's tensors in the tiled layout of
// swiftspec_core/models/awq.py (tile(): B = ceil(N / 64) blocks of 64 output columns, each block's
// rows contiguous, zero-padded past N): qweight int32 [B][K][8], qzeros int32 [B][K/G][8], scales
// fp16 [B][K/G][64], the int32's nibbles in AutoAWQ's order. bf16 x and out, 1 <= M <= 16, fp32
// accumulation, rounded once (swiftspec_core/kernels/awq_gemm.py launches it).
//
// The tensor-core instruction (mma m16n8k16) runs with the weights as A (16 output columns n as its
// rows) and x^T as B (8 rows of x as its columns): two mma's per step cover x rows 0..7 and 8..15
// (the second only where M > 8; rows 0..7 come out of the first alone, the same instructions at
// every M; x rows M..15 hold copies of row 0 and feed only outputs that are never written). An
// output element depends only on its own x row and the weight column, and which chunks, in which
// order, and how the warps' sums combine is decided by (N, K) and the GPU alone (plan() in
// awq_gemm.py), never by M: a row's bits do not depend on M, its index or the other rows, as in
// gemm.cu.
//
// Dequantization, exact: the nibbles of a code pair become bf16 128 + q (0x4300 | q: bf16 holds the
// integers up to 256 exactly), minus 128 + zero in bf16 gives the integer q - zero exactly; the mma
// sums x * (q - zero) over a 32-wide chunk in fp32, and that chunk sum times the fp32 scale is added
// to the accumulator (a chunk lies in one group: G is a multiple of 32). So no weight is rounded:
// the weights are (q - zero) * scale in fp32, where awq_gemm_reference rounds them to bf16 first
// (the tolerance of the GPU test says how far apart that puts the two).
//
// Memory: the kernel is bound by reading the codes once (N K / 2 bytes), so what matters is how
// many bytes are in flight per SM, how DRAM-friendly they are (tiled: a chunk's codes are 1 KB in
// one piece, and the chunks a cluster's warps read at once follow each other), and then how few
// instructions a byte costs. Each warp streams its chunks' codes through its own ring of STAGES
// shared-memory stages with cp.async (no registers held by loads in flight, no block barrier in the
// loop): while it computes chunk i, chunks i + 1 .. i + STAGES - 1 are being copied. A chunk's x
// rows, scales and zeros it loads into registers through L1 one chunk ahead.
//
// Version 2 (issue 11; ncu of version 1 on 70B gate_up: DRAM 42% of peak, L2 55%, issue slots 44%
// busy, no eligible warp 46% of cycles). What each change should buy (not yet measured):
//   - x out of the ring: warps of an SM that hold the same split (same rank and warp, different
//     blocks) read the same x chunks at about the same time, so their L1 loads mostly hit, where
//     each warp copied x's 512 bytes (1 KB at M > 8) from L2 per KB of codes: relieves L2 on
//     gate_up (S = 2, ~7 blocks an SM: ~1.7 -> ~1.1 L2 bytes a code byte at M <= 8); no change where
//     one block of 16 warps holds an SM (o, down): no two warps there share a chunk.
//   - scales and zeros out of the ring (160 bytes a chunk), loaded alike. Once per group instead
//     would save little: with C S >= 4 (every plan() shape but gate_up's) each chunk of a warp lies
//     in another group.
//   - so the ring holds codes only: 10 stages of 1120 bytes in the 11.2 KB a warp that 5 stages of
//     2304 took: 9 KB of codes in flight a warp instead of 4 KB, so a warp that falls behind on its
//     own instructions' latency (the main stall above) keeps DRAM busy longer.
//   - fewer instructions a chunk (ptxas 13.0 SASS of the loop): 207 -> 190 at M <= 8, 239 -> 218
//     above: 2 cp.async instead of 5-6 (for 3-4 loads); the zero pair subtracted as a broadcast
//     operand of the HADD2 (7 instructions a chunk for zeros instead of 16); two chunks an iteration,
//     so the next chunk's operands need no register copies (9 a chunk). The rest of the dequantization
//     has no cheaper exact form for bf16 (nibbles_plus_128), so issue stays the cap: at ~190 a KB an
//     SM at 100% issue streams ~4.9 TB/s (132 SMs, 1.73 GHz), so 80% of DRAM needs ~70% busy.
//   Expected: gate_up and down 10-25% faster (a guess), not yet 1.25x of the floor. Next lever if
//   ncu still shows no eligible warp: more warps. The M <= 8 path alone fits 80 registers without
//   spills (ptxas, __maxnreg__(80): 24 warps an SM, not 16), the M > 8 path spills below ~100: a
//   kernel per row count and a plan() with more (non-power-of-two) splits, changing the bits.
//   Unchanged: plan() (the same (S, C) on 16065 (N, K, SMs) checked), each warp's chunks and their
//   order, every instruction that touches a value (mma, fmaf order, combine): the outputs are
//   bitwise those of version 1.
//
// Layout of the work:
//   cluster = C blocks (C = 1: one block) on 64 output columns (a tile: 8 int32 of each K row);
//   block = S warps; the cluster's C S warps split K, warp w of block (rank) r being split r S + w;
//   warp  = K chunks of 32, c = split, split + C S, ... (interleaved), each chunk's codes
//           [32 k][8 int32] staged in shared memory, its x rows, scales and zeros in registers;
//   lane (g, t) = (lane / 4, lane % 4): int32 column g of the block (columns 8g..8g+7) at chunk rows
//     8t .. 8t + 7, and x rows g and g + 8 at k = 8t .. 8t + 7 (x rows M..15 read row 0 instead:
//     they feed only outputs that are never written);
//   tile j (0..3) = the mma's 16 A rows: row g is output column 8g + 2j, row g + 8 column 8g + 2j + 1
//     (AutoAWQ's nibble order puts exactly that pair in nibbles j and j + 4 of an int32);
//   K inside a chunk is permuted alike for A and B as in gemm.cu: logical k {2t, 2t+1, 2t+8, 2t+9}
//     of lane (g, t) are physical k 8t..8t+3 for the first mma of a chunk, 8t+4..8t+7 for the second;
//   combine = each warp's fp32 accumulators to shared memory, summed over the block's warps 0..S-1
//     in order; with C > 1 the blocks' sums are then added in rank order 0..C-1, read from each
//     other's shared memory (no atomics, no global workspace).
#include <cuda_fp16.h>
#include "common.cuh"
#include "mma.cuh"
#include "awq_common.cuh"

// A warp's ring: AWQ_STAGES stages of one chunk's codes each (awq_gemm.py's STAGES and STAGE_BYTES),
// [32 rows][8 int32], row r at byte 32 r + 32 (r / 8) (the padding makes the 4 lanes t reading rows
// 8t + q at once hit 4 different 8-bank groups): 1120 bytes, 1 KB of them codes.
#define AWQ_STAGES 10
#define AWQ_STAGE_BYTES 1120

__device__ __forceinline__ unsigned code_row_offset(int r) { return 32 * r + 32 * (r >> 3); }

// A lane's loop-invariant offsets, in bytes. They go through shared memory once before the loop:
// values ptxas can derive from the thread index it recomputes inside the loop (about 100
// instructions a chunk, seen in the SASS), a value loaded from shared memory it keeps.
struct LaneConstants {
  unsigned code_src;   // of this lane's first code copy in a chunk's 1 KB (its second: + 512)
  unsigned code_dst;   // its stage offset (the second's: + code_row_offset(16))
  unsigned code_read;  // stage offset of this lane's codes at chunk row 8t (row 8t + q: + 32 q)
  unsigned x_row;      // from x to row g at k 8t (row 0 where g >= M): its x fragment in chunk 0
  unsigned x_row8;     // the same for row g + 8
  unsigned group_col;  // 16 g: int32 column g's 8 scales in a group's 128 bytes (its zeros: 4 g of 32)
};

__device__ __forceinline__ LaneConstants lane_constants(int lane, int M, int K) {
  LaneConstants c;
  // A chunk's codes are 1 KB in the tile, [32 rows][8 int32]: lane copies 16 bytes of chunk rows
  // lane / 2 and 16 + lane / 2 at int32 column 4 (lane % 2), bytes 16 lane and 512 + 16 lane.
  const int row = lane >> 1, col = 4 * (lane & 1);
  c.code_src = 16u * lane;
  c.code_dst = code_row_offset(row) + 4 * col;
  const int g = lane >> 2, t = lane & 3;
  c.code_read = code_row_offset(8 * t) + 4 * g;
  c.x_row = 2u * ((g < M ? g : 0) * (unsigned)K + 8 * t);
  c.x_row8 = 2u * ((g + 8 < M ? g + 8 : 0) * (unsigned)K + 8 * t);
  c.group_col = 16u * g;
  return c;
}

// What a lane needs of a chunk besides its codes, loaded into registers one chunk ahead through
// L1 (ld.global.nc): the warps of an SM that hold the same split read the same x chunks at about
// the same pace, and a group's scales and zeros are read by the warps of its G / 32 chunks.
struct ChunkOperands {
  uint4 x_lo, x_hi;  // x rows g and g + 8 at k 8t .. 8t + 7 of the chunk (x_hi: only where M > 8)
  uint4 scales;      // the chunk's group's fp16 scales of output columns 8g .. 8g + 7
  unsigned zeros;    // their zero points: the int32 of int32 column g
};

// Element e of a block's [32 accumulators][32 lanes] sums (see the combine) plus the bias, rounded
// once into out where its row and column exist.
__device__ __forceinline__ void store_output(float v, int e, int col_block, const bf16* __restrict__ bias,
                                             bf16* __restrict__ out, int M, int N) {
  const int l = e & 31, j = e >> 8, b = (e >> 7) & 1, r = (e >> 5) & 3;
  const int col = (col_block * 8 + (l >> 2)) * 8 + 2 * j + (r >> 1);  // d row g or g + 8
  const int row = b * 8 + (l & 3) * 2 + (r & 1);                      // d column 2t or 2t + 1
  if (row < M && col < N) {
    if (bias != nullptr) v += __bfloat162float(bias[col]);
    out[(size_t)row * N + col] = __float2bfloat16(v);  // round to nearest even, as torch does
  }
}

// One block of a cluster of kCluster (see the layout at the top).
template <int kCluster>
__device__ __forceinline__ void awq_gemm_block(const bf16* __restrict__ x, const int* __restrict__ qweight,
                                               const int* __restrict__ qzeros, const __half* __restrict__ scales,
                                               const bf16* __restrict__ bias, bf16* __restrict__ out,
                                               int M, int N, int K, int group_shift) {
  // [S][STAGES][STAGE_BYTES] rings; after the loop, [S][32 accumulators][32 lanes] floats.
  extern __shared__ __align__(16) unsigned char smem[];
  pdl_start();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int splits = blockDim.x >> 5;
  const int rank = blockIdx.x % kCluster;           // the block's place in its cluster, the same columns
  const int col_block = blockIdx.x / kCluster;
  const int split = rank * splits + warp, all_splits = kCluster * splits;  // this warp among the cluster's
  const int chunks = K >> 5;           // K % G == 0 and G % 32 == 0 (checked in awq_gemm.py)
  const int groups = chunks >> group_shift;
  unsigned char* ring = smem + warp * (AWQ_STAGES * AWQ_STAGE_BYTES);
  const unsigned ring_s = shared_address(ring);

  // The lane constants, through this warp's ring (before any copy into it).
  LaneConstants c;
  {
    LaneConstants* slot = reinterpret_cast<LaneConstants*>(ring) + lane;
    *slot = lane_constants(lane, M, K);
    __syncwarp();
    c = *slot;
    __syncwarp();
  }

  // This warp's chunks split, split + C S, ..: `mine` of them (warp-uniform: mma.sync always runs with
  // all 32 lanes). Every iteration commits one group of code copies (empty past the end), so that
  // group i is chunk i and waiting for all but the newest STAGES - 2 groups means chunk i has landed.
  const int mine = split < chunks ? (chunks - 1 - split) / all_splits + 1 : 0;

  // The next chunk's codes to copy (this warp's chunks in order) and their stage; each issue()
  // advances them by one chunk (C S chunks of K: C S KB of the tile's codes).
  const unsigned char* code_next =
      reinterpret_cast<const unsigned char*>(qweight + ((size_t)col_block * K + split * 32) * 8) + c.code_src;
  const unsigned code_step = all_splits * 1024;  // bytes of the tile between a warp's chunks
  unsigned stage_next = ring_s;
  auto issue = [&]() {
    copy16(stage_next + c.code_dst, code_next);
    copy16(stage_next + c.code_dst + code_row_offset(16), code_next + 512);
    code_next += code_step;
    stage_next = stage_next == ring_s + (AWQ_STAGES - 1) * AWQ_STAGE_BYTES ? ring_s : stage_next + AWQ_STAGE_BYTES;
  };

  // Chunk `chunk`'s x rows, scales and zeros of this lane (x rows 8..15 only where `two`).
  const unsigned char* x_bytes = reinterpret_cast<const unsigned char*>(x);
  const unsigned char* group_scales =
      reinterpret_cast<const unsigned char*>(scales + (size_t)col_block * groups * 64) + c.group_col;
  const unsigned char* group_zeros =
      reinterpret_cast<const unsigned char*>(qzeros + (size_t)col_block * groups * 8) + (c.group_col >> 2);
  auto load_operands = [&](int chunk, bool two) {
    ChunkOperands o;
    const unsigned k_bytes = 64u * chunk;  // 32 k of bf16 a chunk
    o.x_lo = load16_l1(x_bytes + c.x_row + k_bytes);
    o.x_hi = two ? load16_l1(x_bytes + c.x_row8 + k_bytes) : make_uint4(0u, 0u, 0u, 0u);
    const unsigned group = chunk >> group_shift;
    o.scales = load16_l1(group_scales + 128u * group);  // 64 fp16 a group
    o.zeros = load4_l1(group_zeros + 32u * group);      // 8 int32 a group
    return o;
  };

  float acc[4][2][4];  // [tile j][x rows 0..7 | 8..15][d fragment]
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int b = 0; b < 2; ++b) acc[j][b][0] = acc[j][b][1] = acc[j][b][2] = acc[j][b][3] = 0.f;

  // The pipeline, inlined twice with kTwo a constant: rows 8..15 exist (M > 8: every chunk's
  // second pair of mma's and its x rows 8..15) or not; rows 0..7 run the same instructions in both.
  // (A lambda with a bool, not a template: NVRTC takes no generic lambdas.)
  auto pipeline = [&](const bool kTwo) {
  #pragma unroll
    for (int i = 0; i < AWQ_STAGES - 1; ++i) {
      if (i < mine) issue();
      copies_commit();
    }
    int stage = 0, chunk = split;
    // The warp's chunk i (chunk `chunk`), computed from `now` while `next`, chunk i + 1's operands,
    // loads.
    auto step = [&](int i, const ChunkOperands& now, ChunkOperands& next) {
      if (i + 1 < mine) next = load_operands(chunk + all_splits, kTwo);
      chunk += all_splits;
      copies_wait<AWQ_STAGES - 2>();
      __syncwarp();  // every lane's copies of chunk i visible; every lane done with chunk i - 1's stage
      if (i + AWQ_STAGES - 1 < mine) issue();  // into chunk i - 1's stage
      copies_commit();

      const unsigned char* st = ring + stage * AWQ_STAGE_BYTES;
      stage = stage + 1 == AWQ_STAGES ? 0 : stage + 1;
      unsigned w[8];  // codes of int32 column g at chunk rows 8t + q
  #pragma unroll
      for (int q = 0; q < 8; ++q) w[q] = *reinterpret_cast<const unsigned*>(st + c.code_read + 32 * q);
      const __half* s8 = reinterpret_cast<const __half*>(&now.scales);

      // Code pairs of rows (8t + 2p, 8t + 2p + 1): nibbles 0..3 of both (low halves), 4..7 (high).
      unsigned low[4], high[4];
  #pragma unroll
      for (int p = 0; p < 4; ++p) {
        low[p] = permute(w[2 * p], w[2 * p + 1], 0x5410u);   // (a.lo, b.lo)
        high[p] = permute(w[2 * p], w[2 * p + 1], 0x7632u);  // (a.hi, b.hi)
      }
  #pragma unroll
      for (int j = 0; j < 4; ++j) {
        // 128 + zero of column 8g + 2j (nibble j) in the low half, of 8g + 2j + 1 (nibble j + 4) in
        // the high half; each subtracted from both halves of a code pair, as a broadcast operand.
        const unsigned zero_pair = nibbles_plus_128(now.zeros, j);
        unsigned a_even[4], a_odd[4];  // (q - z) of column 8g + 2j | 8g + 2j + 1 at k 8t + 2p, 8t + 2p + 1
  #pragma unroll
        for (int p = 0; p < 4; ++p) {
          a_even[p] = sub_low_bf16(nibbles_plus_128(low[p], j), zero_pair);
          a_odd[p] = sub_high_bf16(nibbles_plus_128(high[p], j), zero_pair);
        }
        float chunk_sum[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        // First mma: physical k 8t..8t+3 (p = 0, 1; x .x .y); second: 8t+4..8t+7 (p = 2, 3; x .z .w).
        mma_16816(chunk_sum[0], a_even[0], a_odd[0], a_even[1], a_odd[1], now.x_lo.x, now.x_lo.y);
        mma_16816(chunk_sum[0], a_even[2], a_odd[2], a_even[3], a_odd[3], now.x_lo.z, now.x_lo.w);
        if (kTwo) {
          mma_16816(chunk_sum[1], a_even[0], a_odd[0], a_even[1], a_odd[1], now.x_hi.x, now.x_hi.y);
          mma_16816(chunk_sum[1], a_even[2], a_odd[2], a_even[3], a_odd[3], now.x_hi.z, now.x_hi.w);
        }
        const float s_row_g = __half2float(s8[2 * j]), s_row_g8 = __half2float(s8[2 * j + 1]);
  #pragma unroll
        for (int b = 0; b < 2; ++b) {  // d rows g (column 8g+2j) and g+8 (column 8g+2j+1)
          if (b == 1 && !kTwo) break;
          acc[j][b][0] = fmaf(s_row_g, chunk_sum[b][0], acc[j][b][0]);
          acc[j][b][1] = fmaf(s_row_g, chunk_sum[b][1], acc[j][b][1]);
          acc[j][b][2] = fmaf(s_row_g8, chunk_sum[b][2], acc[j][b][2]);
          acc[j][b][3] = fmaf(s_row_g8, chunk_sum[b][3], acc[j][b][3]);
        }
      }
    };
    // Two chunks an iteration, the operand sets swapping roles: no register copies of one into the
    // other (9 instructions a chunk when the loop copied `next` into `now`).
    ChunkOperands even, odd;
    if (mine > 0) even = load_operands(split, kTwo);
    for (int i = 0; i < mine; i += 2) {
      step(i, even, odd);
      if (i + 1 < mine) step(i + 1, odd, even);
    }
  };
  if (M > 8) pipeline(true);
  else pipeline(false);
  copies_wait<0>();  // only empty groups are left; the rings become the combine's buffer
  __syncthreads();

  float* partial = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int b = 0; b < 2; ++b)
#pragma unroll
      for (int r = 0; r < 4; ++r) partial[(warp * 32 + j * 8 + b * 4 + r) * 32 + lane] = acc[j][b][r];
  __syncthreads();

  // One thread per output element of the block: warps 0..S-1 added in order, then (kCluster > 1)
  // the cluster's blocks' sums in rank order, then the bias, then one rounding.
  // e = (j * 8 + b * 4 + r) * 32 + lane, with lane and r as in the mma's d fragment.
  float* block_sum = partial + splits * 1024;  // [1024], past the partials (kCluster > 1)
  for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
    float v = partial[e];
    for (int s = 1; s < splits; ++s) v += partial[s * 1024 + e];
    if (kCluster == 1) store_output(v, e, col_block, bias, out, M, N);
    else block_sum[e] = v;
  }
  if (kCluster > 1) {
    cluster_barrier();  // every block's sums written and visible to the cluster
    const unsigned sum_s = shared_address(block_sum);
    for (int e = threadIdx.x + rank * blockDim.x; e < 32 * 32; e += kCluster * blockDim.x) {
      float v = cluster_load(sum_s + 4 * e, 0);
      for (int q = 1; q < kCluster; ++q) v += cluster_load(sum_s + 4 * e, q);
      store_output(v, e, col_block, bias, out, M, N);
    }
    cluster_barrier();  // no block leaves (its shared memory) while another still reads it
  }
}

// Up to 16 warps (512 threads) a block, so at most 128 registers a lane; shared memory
// S * STAGES * STAGE_BYTES (S = 16: 175 KB, opted in above 48 KB by awq_gemm.py). A cluster of C
// blocks (C > 1: __cluster_dims__, so a plain launch of a grid of whole clusters) splits K C ways
// more on the same 64 columns.
#define AWQ_GEMM_KERNEL(NAME, C, ATTRIBUTES)                                                             \
  extern "C" __global__ void __launch_bounds__(512) ATTRIBUTES NAME(                                     \
      const bf16* __restrict__ x, const int* __restrict__ qweight, const int* __restrict__ qzeros,       \
      const __half* __restrict__ scales, const bf16* __restrict__ bias, bf16* __restrict__ out, int M,   \
      int N, int K, int group_shift) {                                                                   \
    awq_gemm_block<C>(x, qweight, qzeros, scales, bias, out, M, N, K, group_shift);                      \
  }
AWQ_GEMM_KERNEL(awq_gemm_c1, 1, )
AWQ_GEMM_KERNEL(awq_gemm_c2, 2, __cluster_dims__(2, 1, 1))
AWQ_GEMM_KERNEL(awq_gemm_c4, 4, __cluster_dims__(4, 1, 1))
AWQ_GEMM_KERNEL(awq_gemm_c8, 8, __cluster_dims__(8, 1, 1))
