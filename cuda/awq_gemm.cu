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
// instructions a byte costs (about 210 a KB of codes at M <= 8). Each warp streams its chunks
// through its own ring of STAGES shared-memory stages with cp.async (no registers held by loads in
// flight, no block barrier in the loop): while it computes chunk i, chunks i + 1 .. i + STAGES - 1
// are being copied, (STAGES - 1) KB of codes.
//
// Layout of the work:
//   cluster = C blocks (C = 1: one block) on 64 output columns (a tile: 8 int32 of each K row);
//   block = S warps; the cluster's C S warps split K, warp w of block (rank) r being split r S + w;
//   warp  = K chunks of 32, c = split, split + C S, ... (interleaved), each staged whole in shared
//           memory: codes [32 k][8 int32], x [16 rows][32 k], the chunk's group's scales and zeros;
//   lane (g, t) = (lane / 4, lane % 4): int32 column g of the block (columns 8g..8g+7) at chunk rows
//     8t .. 8t + 7, and x rows g and g + 8 at k = 8t .. 8t + 7;
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

// A warp's ring: AWQ_STAGES stages of one chunk each (awq_gemm.py's STAGES and STAGE_BYTES):
//   codes  [32 rows][8 int32], row r at byte 32 r + 32 (r / 8) (the padding makes the 4 lanes t
//          reading rows 8t + q at once hit 4 different 8-bank groups), 1120 bytes;
//   x      [16 rows][32 k] bf16, 1024 bytes;  scales [64] fp16, 128 bytes;  zeros [8] int32, 32 bytes.
#define AWQ_STAGES 5
#define AWQ_STAGE_BYTES 2304
#define AWQ_X 1120
#define AWQ_SCALES 2144
#define AWQ_ZEROS 2272

__device__ __forceinline__ unsigned code_row_offset(int r) { return 32 * r + 32 * (r >> 3); }

__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{\n .reg .u64 t;\n cvta.to.shared.u64 t, %1;\n cvt.u32.u64 %0, t;\n}\n" : "=r"(a) : "l"(p));
  return a;
}

// Asynchronous global -> shared copies of 16 bytes, bypassing L1 (read once). Every copy is
// unconditional: a lane with nothing to copy (x rows M..15) copies row 0's bytes instead, which only
// feed outputs that are never written; columns past N are the tiles' zero padding.
__device__ __forceinline__ void copy16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void copies_wait() {  // all but the newest N committed groups have landed
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

// Nibble j of each half of `pair` (and what sits above it, masked off), as bf16x2 128 + nibble:
// (pair >> 4j) & 0x000F000F | 0x43004300, the last two as one lop3 (immLut 0xEA). The shift is
// the high word of pair * 2^(32 - 4j): an IMAD, which issues to the FMA pipe, where a SHF would
// share the integer pipe (half rate) with the lop3's and prmt's that bound this kernel's issue.
__device__ __forceinline__ unsigned nibbles_plus_128(unsigned pair, int j) {
  unsigned shifted = pair, v;
  if (j > 0) asm("mul.hi.u32 %0, %1, %2;\n" : "=r"(shifted) : "r"(pair), "r"(1u << (32 - 4 * j)));
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(v) : "r"(shifted), "r"(0x000F000Fu), "r"(0x43004300u));
  return v;
}

__device__ __forceinline__ unsigned sub_bf16x2(unsigned a, unsigned b) {  // exact for these integers
  __nv_bfloat162 r = __hsub2(*reinterpret_cast<__nv_bfloat162*>(&a), *reinterpret_cast<__nv_bfloat162*>(&b));
  return *reinterpret_cast<unsigned*>(&r);
}

__device__ __forceinline__ unsigned permute(unsigned a, unsigned b, unsigned selector) {
  unsigned v;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(v) : "r"(a), "r"(b), "r"(selector));
  return v;
}

// A lane's loop-invariant offsets, in bytes. They go through shared memory once before the loop:
// values ptxas can derive from the thread index it recomputes inside the loop (about 100
// instructions a chunk, seen in the SASS), a value loaded from shared memory it keeps.
struct LaneConstants {
  unsigned code_src;    // of this lane's first code copy in a chunk's 1 KB (its second: + 512)
  unsigned code_dst;    // its stage offset (the second's: + code_row_offset(16))
  unsigned x_src;       // of its copy of x row x_row (row 0 where x_row >= M) in x, from k 0
  unsigned x_src8;      // the same for row x_row + 8
  unsigned x_dst;       // stage offset of the x_row copy (+ 512: x_row + 8)
  unsigned scale_src;   // of its scales copy in a group's 64 scales of the tile
  unsigned scale_dst;
  unsigned zero_src;    // of its zeros copy in a group's 8 int32 of the tile
  unsigned zero_dst;
  unsigned code_read;   // stage offset of this lane's codes at chunk row 8t (row 8t + q: + 32 q)
  unsigned x_read;      // stage offset of x row g at k 8t (row g + 8: + 512)
  unsigned group_read;  // 4 g: int32 column g's zeros from AWQ_ZEROS (its 8 scales: 16 g from AWQ_SCALES)
};

__device__ __forceinline__ LaneConstants lane_constants(int lane, int M, int K) {
  LaneConstants c;
  // A chunk's codes are 1 KB in the tile, [32 rows][8 int32]: lane copies 16 bytes of chunk rows
  // lane / 2 and 16 + lane / 2 at int32 column 4 (lane % 2), bytes 16 lane and 512 + 16 lane.
  const int row = lane >> 1, col = 4 * (lane & 1);
  c.code_src = 16u * lane;
  c.code_dst = code_row_offset(row) + 4 * col;
  const int x_row = lane >> 2, x_part = lane & 3;  // x rows x_row and x_row + 8, 16 bytes at k 8 x_part
  c.x_src = 2u * ((x_row < M ? x_row : 0) * (unsigned)K + 8 * x_part);
  c.x_src8 = 2u * ((x_row + 8 < M ? x_row + 8 : 0) * (unsigned)K + 8 * x_part);
  c.x_dst = AWQ_X + 64 * x_row + 16 * x_part;
  const int scale_unit = lane & 7;  // the 8 scales of int32 column scale_unit (4 lanes copy each)
  c.scale_src = 16u * scale_unit;
  c.scale_dst = AWQ_SCALES + 16 * scale_unit;
  const int zero_col = 4 * (lane & 1);  // 16 lanes copy each 16 bytes
  c.zero_src = 4u * zero_col;
  c.zero_dst = AWQ_ZEROS + 4 * zero_col;
  const int g = lane >> 2, t = lane & 3;
  c.code_read = code_row_offset(8 * t) + 4 * g;
  c.x_read = AWQ_X + 64 * g + 16 * t;
  c.group_read = 4 * g;
  return c;
}

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
  // all 32 lanes). Every iteration commits one group (empty past the end), so that group i is
  // chunk i and waiting for all but the newest STAGES - 2 groups means chunk i has landed.
  const int mine = split < chunks ? (chunks - 1 - split) / all_splits + 1 : 0;

  // The next chunk to copy (this warp's chunks in order), its sources and its stage; each issue()
  // advances them by one chunk (C S chunks of K: C S KB of the tile's codes).
  const unsigned char* code_next =
      reinterpret_cast<const unsigned char*>(qweight + ((size_t)col_block * K + split * 32) * 8) + c.code_src;
  const unsigned code_step = all_splits * 1024;  // bytes of the tile between a warp's chunks
  const unsigned char* x_next = reinterpret_cast<const unsigned char*>(x + split * 32) + c.x_src;
  const int x8_offset = (int)(c.x_src8 - c.x_src);  // negative where row x_row + 8 is row 0
  const unsigned char* scale_base =
      reinterpret_cast<const unsigned char*>(scales + (size_t)col_block * groups * 64) + c.scale_src;
  const unsigned char* zero_base =
      reinterpret_cast<const unsigned char*>(qzeros + (size_t)col_block * groups * 8) + c.zero_src;
  int chunk_next = split;
  unsigned stage_next = ring_s;
  auto issue = [&](bool two) {
    copy16(stage_next + c.code_dst, code_next);
    copy16(stage_next + c.code_dst + code_row_offset(16), code_next + 512);
    copy16(stage_next + c.x_dst, x_next);
    if (two) copy16(stage_next + c.x_dst + 512, x_next + x8_offset);
    const unsigned group = chunk_next >> group_shift;
    copy16(stage_next + c.scale_dst, scale_base + group * 128);  // 64 fp16 a group
    copy16(stage_next + c.zero_dst, zero_base + group * 32);     // 8 int32 a group
    code_next += code_step;
    x_next += all_splits * 64;  // 32 k of bf16 per chunk
    chunk_next += all_splits;
    stage_next = stage_next == ring_s + (AWQ_STAGES - 1) * AWQ_STAGE_BYTES ? ring_s : stage_next + AWQ_STAGE_BYTES;
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
      if (i < mine) issue(kTwo);
      copies_commit();
    }
    int stage = 0;
    for (int i = 0; i < mine; ++i) {
      copies_wait<AWQ_STAGES - 2>();
      __syncwarp();  // every lane's copies of chunk i visible; every lane done with chunk i - 1's stage
      if (i + AWQ_STAGES - 1 < mine) issue(kTwo);  // into chunk i - 1's stage
      copies_commit();

      const unsigned char* st = ring + stage * AWQ_STAGE_BYTES;
      stage = stage + 1 == AWQ_STAGES ? 0 : stage + 1;
      unsigned w[8];  // codes of int32 column g at chunk rows 8t + q
  #pragma unroll
      for (int q = 0; q < 8; ++q) w[q] = *reinterpret_cast<const unsigned*>(st + c.code_read + 32 * q);
      const uint4 lo = *reinterpret_cast<const uint4*>(st + c.x_read);
      uint4 hi = make_uint4(0u, 0u, 0u, 0u);
      if (kTwo) hi = *reinterpret_cast<const uint4*>(st + c.x_read + 512);
      const uint4 sc = *reinterpret_cast<const uint4*>(st + AWQ_SCALES + 4 * c.group_read);
      const unsigned zeros = *reinterpret_cast<const unsigned*>(st + AWQ_ZEROS + c.group_read);
      const __half* s8 = reinterpret_cast<const __half*>(&sc);

      // Code pairs of rows (8t + 2p, 8t + 2p + 1): nibbles 0..3 of both (low halves), 4..7 (high).
      unsigned low[4], high[4];
  #pragma unroll
      for (int p = 0; p < 4; ++p) {
        low[p] = permute(w[2 * p], w[2 * p + 1], 0x5410u);   // (a.lo, b.lo)
        high[p] = permute(w[2 * p], w[2 * p + 1], 0x7632u);  // (a.hi, b.hi)
      }
      const unsigned zeros_low = permute(zeros, zeros, 0x1010u), zeros_high = permute(zeros, zeros, 0x3232u);
  #pragma unroll
      for (int j = 0; j < 4; ++j) {
        // (128 + zero) of columns 8g + 2j (nibble j) and 8g + 2j + 1 (nibble j + 4), in both halves.
        const unsigned z_even = nibbles_plus_128(zeros_low, j), z_odd = nibbles_plus_128(zeros_high, j);
        unsigned a_even[4], a_odd[4];  // (q - z) of column 8g + 2j | 8g + 2j + 1 at k 8t + 2p, 8t + 2p + 1
  #pragma unroll
        for (int p = 0; p < 4; ++p) {
          a_even[p] = sub_bf16x2(nibbles_plus_128(low[p], j), z_even);
          a_odd[p] = sub_bf16x2(nibbles_plus_128(high[p], j), z_odd);
        }
        float chunk[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
        // First mma: physical k 8t..8t+3 (p = 0, 1; x .x .y); second: 8t+4..8t+7 (p = 2, 3; x .z .w).
        mma_16816(chunk[0], a_even[0], a_odd[0], a_even[1], a_odd[1], lo.x, lo.y);
        mma_16816(chunk[0], a_even[2], a_odd[2], a_even[3], a_odd[3], lo.z, lo.w);
        if (kTwo) {
          mma_16816(chunk[1], a_even[0], a_odd[0], a_even[1], a_odd[1], hi.x, hi.y);
          mma_16816(chunk[1], a_even[2], a_odd[2], a_even[3], a_odd[3], hi.z, hi.w);
        }
        const float s_row_g = __half2float(s8[2 * j]), s_row_g8 = __half2float(s8[2 * j + 1]);
  #pragma unroll
        for (int b = 0; b < 2; ++b) {  // d rows g (column 8g+2j) and g+8 (column 8g+2j+1)
          if (b == 1 && !kTwo) break;
          acc[j][b][0] = fmaf(s_row_g, chunk[b][0], acc[j][b][0]);
          acc[j][b][1] = fmaf(s_row_g, chunk[b][1], acc[j][b][1]);
          acc[j][b][2] = fmaf(s_row_g8, chunk[b][2], acc[j][b][2]);
          acc[j][b][3] = fmaf(s_row_g8, chunk[b][3], acc[j][b][3]);
        }
      }
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
// S * STAGES * STAGE_BYTES (S = 16: 180 KB, opted in above 48 KB by awq_gemm.py). A cluster of C
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
