// The block of the AWQ GEMM kernels: the main loop, the combine and the epilogues. awq_gemm.cu
// (awq_gemm_*, awq_swiglu_*; its header has the numerics and what each choice was measured
// against) and awq_gemm_allreduce.cu (the row-parallel GEMM with the LL all-reduce in its
// epilogue) instantiate it.
#pragma once

// Layout of the work:
//   cluster = C blocks (C = 1: one block) on one tile of 64 output columns;
//   block = S warps; the cluster's C S warps split K by groups: warp w of block (rank) r is split
//     s = r S + w and sums groups s, s + C S, s + 2 C S, ... (in that order);
//   warp = those groups' chunks, each chunk's 1 KB of codes copied by cp.async into the warp's own
//     ring of AWQ_STAGES 1 KB stages (no block barrier in the loop), x rows, zeros and scales
//     through L1 (x a chunk ahead at M <= 8, zeros a group ahead), its accumulators in shared memory;
//   lane (g, t) = (lane / 4, lane % 4), in mma tile j (0..3):
//     A row g      = output column 8 (g / 2) + 2 j + (g % 2)        (int32 column g / 2, half g % 2)
//     A row g + 8  = output column 32 + 8 (g / 2) + 2 j + (g % 2)   (int32 column 4 + g / 2)
//     (the half g % 2 of an int32 holds nibbles 4 (g % 2) .. + 3: columns 2 i + g % 2, i = 0..3,
//     nibble j of the half being tile j);
//     logical k {2t, 2t+1 | 2t+8, 2t+9} of mma h (0, 1) = physical chunk k {8t + 4h, +1 | 8t + 4h + 2,
//     +3}, the same for A and B, so lane (g, t)'s x fragment is x row g at k 8t .. 8t + 7 (one 16-byte
//     load: .x .y feed mma 0, .z .w mma 1);
//   combine = as version 2: each warp's fp32 accumulators to shared memory, summed over the block's
//     warps 0..S-1 in order, then (C > 1) the blocks' sums in rank order 0..C-1 through distributed
//     shared memory (no atomics, no global workspace).
#include <cuda_fp16.h>
#include "common.cuh"
#include "mma.cuh"
#include "awq_group.cuh"
#include "ll_line.cuh"


// One block of a cluster of kCluster; kTwo: x rows 8..15 exist (M > 8); kChunks = G / 32 chunks a
// group (1, 2 or 4: the group loop's chunks unrolled, so where each copy goes is known at compile
// time); kSwiglu: two halves of warps, on a gate tile and its up tile (awq_swiglu_*, awq_gemm.cu);
// kAllReduce (kCluster = 1, no bias, no norms: awq_gemm_allreduce.cu): the tile, rounded as out
// would be, all-reduced over ll's ranks into out.
template <int kCluster, bool kTwo, int kChunks, bool kSwiglu, bool kF16, bool kAllReduce = false>
__device__ __forceinline__ void awq_gemm_block(const void* __restrict__ x, const int* __restrict__ qweight,
                                               const int* __restrict__ qzeros, const __half* __restrict__ scales,
                                               const bf16* __restrict__ bias, bf16* out, int M, int N, int K,
                                               const Norms& norms, const LLTile& ll = LLTile{}) {
  static_assert(!kAllReduce || (kCluster == 1 && !kSwiglu), "the all-reduce epilogue takes one block a tile");
  // [warps] rings of [STAGES][1 KB] stages then [STAGES][160 B] meta slots, then [warps][32 lanes]
  // [16 or 32 floats] accumulators; after the loop, a cluster's [halves][32][32] block sums in the
  // first rings.
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int splits = kSwiglu ? warps / 2 : warps;  // warps on one tile: S
  const int half = kSwiglu && warp >= splits ? 1 : 0;  // kSwiglu: 0 on the gate tile, 1 on the up tile
  const int rank = blockIdx.x % kCluster;  // the block's place in its cluster (the same tile)
  const int col_block = blockIdx.x / kCluster;  // out's tile
  const int tile = col_block + half * (N / 128);  // the weight tile this warp reads (up: F / 64 further)
  const int split = rank * splits + warp - half * splits, all_splits = kCluster * splits;
  const int groups = K / (32 * kChunks);  // K % G == 0 (checked in awq_gemm.py)
  unsigned char* ring = smem + warp * AWQ_RING_BYTES;
  const unsigned ring_s = shared_address(ring);
  // Chunk n's stage (at G = 128 known at compile time: n % STAGES = n % (G / 32)).
  auto stage_of = [&](int n) { return ring_s + (unsigned)(n & (AWQ_STAGES - 1)) * AWQ_STAGE_BYTES; };
  const unsigned meta_s = ring_s + AWQ_STAGES * AWQ_STAGE_BYTES;  // the meta slots, past the stages

  const LaneConstants c = lane_constants_once(ring, lane, M, K);

  // This warp's groups split, split + C S, ..: `mine` of them, `chunks` chunks (warp-uniform: the
  // mma's and ldmatrix's run with all 32 lanes). Every chunk step commits one group of copies
  // (empty past the end), so waiting for all but the newest STAGES - 2 means the chunk has landed.
  const int mine = split < groups ? (groups - 1 - split) / all_splits + 1 : 0;
  const int chunks = mine * kChunks;

  // Codes: a tile's chunk q at byte 1024 q; copy_group is the first chunk of the group that holds
  // the next chunk to copy (this lane's piece of it), advanced by group_stride past each group.
  const size_t group_stride = (size_t)all_splits * kChunks * 1024;
  const unsigned char* copy_group = reinterpret_cast<const unsigned char*>(qweight) + (size_t)tile * K * 32 +
                                    (size_t)split * kChunks * 1024 + c.copy_src;
  // A group's meta: lanes 0..7 copy its 128 bytes of scales, lanes 8 and 9 its 32 bytes of zeros (the
  // tile's groups are consecutive in both tensors); lane 10 on copies nothing.
  // meta_next: this lane's 16 bytes of the next group to copy, advanced as copy_group.
  const unsigned meta_group_bytes = lane < 8 ? 128 : 32;
  const unsigned char* meta_next =
      (lane < 8 ? reinterpret_cast<const unsigned char*>(scales) + 16 * lane
                : reinterpret_cast<const unsigned char*>(qzeros) + 16 * (lane - 8)) +
      ((size_t)tile * groups + split) * meta_group_bytes;
  // Copy chunk p of its group (p known at compile time where the chunk loop is unrolled) into
  // `stage`, and with a group's first chunk the group's meta into slot `ordinal` (the group's place
  // among this warp's, mod STAGES); past a group's last chunk, on to the next group.
  auto copy_chunk = [&](int p, int ordinal, unsigned stage) {
    copy16(stage + c.copy_dst, copy_group + 1024 * p);
    copy16(stage + copy_dst16(c.copy_dst), copy_group + 1024 * p + 512);
    if (p == 0) {
      if (lane < 10) copy16(meta_s + (unsigned)(ordinal & (AWQ_STAGES - 1)) * AWQ_META_BYTES + 16 * lane, meta_next);
      meta_next += all_splits * meta_group_bytes;
    }
    if (p == kChunks - 1) copy_group += group_stride;
  };
  // x: row g's (g + 8's) 16 bytes at k 8t of chunk p of group `group` (64 bytes a chunk; offsets < 2 K
  // fit 32 bits: awq_gemm.py checks K).
  const unsigned char* x_bytes = reinterpret_cast<const unsigned char*>(x);
  auto x_of = [&](unsigned group, int p, unsigned row) {
    return load16_l1(x_bytes + (group * (kChunks * 64) + 64 * p + row));
  };

  // The warp's accumulators live in its slot of the buffer past the rings (Accumulators). Updated
  // once a group, they hold no registers through the chunk loop.
  using Acc = Accumulators<kTwo>;
  float4* acc = reinterpret_cast<float4*>(smem + warps * AWQ_RING_BYTES) + (warp * 32 + lane) * Acc::kPieces;
#pragma unroll
  for (int v = 0; v < Acc::kPieces; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);

#pragma unroll
  for (int p = 0; p < AWQ_STAGES - 1; ++p) {  // chunks 0 .. STAGES - 2 into stages 0 .. STAGES - 2
    if (p < chunks) copy_chunk(p % kChunks, p / kChunks, stage_of(p));
    copies_commit();
  }
  // Only now wait for the kernel before this one (it writes x): the copies above read weights, which
  // no kernel writes, so under PDL their DRAM latency overlaps that kernel's last blocks (v5).
  pdl_start();
  // The sums of squares the GEMM before wrote (norms.row_sums: K / 64 tiles of 16 floats, read in the
  // epilogue) into L1 now, while the loop runs.
  if (norms.row_sums != nullptr && threadIdx.x < K / 128)
    asm volatile("prefetch.global.L1 [%0];\n" ::"l"(norms.row_sums + 32 * threadIdx.x));

  uint4 xs[2];  // x row g of chunks n (xs[n % 2]) and n + 1 (n: this warp's chunk count)
  xs[0] = xs[1] = make_uint4(0u, 0u, 0u, 0u);
  // M <= 8: the next chunk's x row g, a pointer advanced as copy_group (no offsets recomputed a chunk).
  const unsigned char* x_next = x_bytes + c.x_row + (size_t)split * kChunks * 64;
  const size_t x_group_step = (size_t)(all_splits - 1) * kChunks * 64 + 64;  // last chunk -> next group's first
  auto load_x_next = [&](int p, uint4& v) {  // p: the in-group index of the chunk loaded
    v = load16_l1(x_next);
    x_next += p == kChunks - 1 ? x_group_step : 64;
  };
  if (!kTwo && chunks > 0) load_x_next(0, xs[0]);
  for (int i = 0; i < mine; ++i) {
    const unsigned group = split + i * all_splits;
    sum_group<kTwo, kChunks, kF16>(i, chunks, ring_s, c, xs, acc, lane, copy_chunk,
                                   [&](int p, unsigned row) { return x_of(group, p, row); }, load_x_next);
  }
  copies_wait<0>();  // only empty groups are left; the rings become the cluster's block sums
  __syncthreads();

  __shared__ float row_scale[16];  // the RMSNorm before this GEMM, per row (where norms.row_sums)
  norm_row_scales(norms, M, K, row_scale);
  // The next RMSNorm's sums (kCluster = 1: a block stores its whole tile): out^2 by row and column in
  // the rings, summed a row at a time in column order after the combine.
  float* squares = reinterpret_cast<float*>(smem);
  const Epilogue ep{norms.row_sums != nullptr ? row_scale : nullptr, kSwiglu ? nullptr : norms.residual,
                    kCluster == 1 && !kSwiglu ? norms.next_norm : nullptr, norms.next_x, squares, norms.half_out,
                    norms.next_x_scale};

  // Warp w's accumulators of lane l: its pieces [w][l][Acc::kPieces] of 4 floats, piece (j, b) at
  // Acc::piece(j, b, l) holding d fragment registers r = 0..3 of tile j, x rows 8b ..
  float4* partial = reinterpret_cast<float4*>(smem + warps * AWQ_RING_BYTES);
  auto accumulator = [&](int w, int e) {  // warp w's element e = (8 j + 4 b + r) 32 + l: float r of its piece (j, b)
    const int l = e & 31, r = (e >> 5) & 3;
    return reinterpret_cast<const float*>(partial + (w * 32 + l) * Acc::kPieces + Acc::piece(e >> 8, (e >> 7) & 1, l))[r];
  };

  // The combine, a thread a piece of a lane (half h's tile): the tile's warps 0..S-1 added in order,
  // element by element, into the first warp's piece. Thread q = 32 (2 j + b, or j) + l: a quarter
  // warp's 16-byte reads fall in 8 different bank groups (Accumulators' swizzle), where one element
  // a thread read a warp's 32 floats from 8 banks (4-way conflicts), S times: the epilogue after
  // the loop took ~1.4 us on the 70B o (NOTES v244, v245). Rows 8..15 only where kTwo (pieces with
  // b = 1 exist only there).
  constexpr int kHalves = kSwiglu ? 2 : 1;
  for (int q = threadIdx.x; q < kHalves * 32 * Acc::kPieces; q += blockDim.x) {
    const int h = q / (32 * Acc::kPieces), l = q & 31, jb = (q >> 5) % Acc::kPieces;  // jb: 2 j + b, or j
    float4* piece = partial + (h * splits * 32 + l) * Acc::kPieces + Acc::piece(kTwo ? jb >> 1 : jb, kTwo ? jb & 1 : 0, l);
    float4 sum = piece[0];
#pragma unroll 3  // by 1, 2, 4 or 8 a g32 r16 awq_swiglu (80 registers) spilled
    for (int s = 1; s < splits; ++s) {
      const float4 a = piece[s * 32 * Acc::kPieces];
      sum.x += a.x, sum.y += a.y, sum.z += a.z, sum.w += a.w;
    }
    piece[0] = sum;  // only this thread reads or writes this piece of any warp
  }
  __syncthreads();

  // Then one thread per output element of the block (its residual and bias loads all in flight at
  // once): (kCluster > 1) the cluster's blocks' sums in rank order, the bias, one rounding (of the
  // gate and up sums each, kSwiglu).
  float* block_sum = reinterpret_cast<float*>(smem);  // [kHalves][1024], in the rings (kCluster > 1)
  bf16* tile_out = reinterpret_cast<bf16*>(smem);  // kAllReduce: the tile as out gets it, [M][64], in the rings
  for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
    if (!kTwo && ((e >> 7) & 1)) continue;
    float v[kHalves];
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      v[h] = accumulator(h * splits, e);
      if (kCluster > 1) block_sum[h * 1024 + e] = v[h];
    }
    if constexpr (kAllReduce) store_output<false, kF16>(v, e, 0, nullptr, tile_out, M, 64, Epilogue{});
    else if (kCluster == 1) store_output<kSwiglu, kF16>(v, e, col_block, bias, out, M, N, ep);
  }
  if constexpr (kAllReduce) {
    __syncthreads();  // the whole tile in tile_out
    allreduce_tile([&](int row, int col) { return *reinterpret_cast<const uint2*>(tile_out + row * 64 + col); },
                   out, M, N, col_block * 64, 64, ll);
  }
  if (ep.next_norm != nullptr) {
    __syncthreads();
    store_next_sums(squares, norms.next_sums, M, N, col_block);
  }
  if (kCluster > 1) {
    cluster_barrier();  // every block's sums written and visible to the cluster
    const unsigned sum_s = shared_address(block_sum);
    for (int e = threadIdx.x + rank * blockDim.x; e < 32 * 32; e += kCluster * blockDim.x) {
      if (!kTwo && ((e >> 7) & 1)) continue;
      float v[kHalves];
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
        v[h] = cluster_load(sum_s + 4 * (h * 1024 + e), 0);
        for (int q = 1; q < kCluster; ++q) v[h] += cluster_load(sum_s + 4 * (h * 1024 + e), q);
      }
      store_output<kSwiglu, kF16>(v, e, col_block, bias, out, M, N, ep);
    }
    cluster_barrier();  // no block leaves (its shared memory) while another still reads it
  }
}
