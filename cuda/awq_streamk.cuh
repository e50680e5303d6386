// The stream-K block of the AWQ GEMM (awq_streamk.cu): the same warps, groups and numerics as
// awq_gemm_block.cuh, but the work split evenly over one block an SM, so that no SM holds a tile
// more than another (the 70B gate_up's 448 blocks on 132 SMs put 4 on some and 3 on the rest; its
// qkv's 160 tiles put 2 on 28 SMs; NOTES v252).
#pragma once
#include "awq_group.cuh"

// Layout of the work:
//   unit = (logical tile, group), U = tiles x groups of them in logical tile order; a logical tile
//     is a weight tile of 64 output columns (kSwiglu: gate tile p is logical tile 2p, its up tile,
//     F / 64 tiles further in the weight, 2p + 1), and a column block the kHalves logical tiles of
//     one epilogue (out's tile);
//   warp W of the T = blocks x S warps of the grid sums the contiguous units [U W / T, U (W + 1) / T)
//     (the host checks U >= T, so none is empty, and U / T <= groups, so a warp crosses at most one
//     tile boundary); a warp that crosses one parks the first tile's sums in the block's boundary
//     slot of that tile and goes on from zero;
//   a block's sums of a tile = its warps' on that tile added in warp order (the combine by pieces
//     of awq_gemm_block.cuh); a column block is finished by the block holding its last unit (its
//     owner), which adds the partials of the earlier blocks holding its units (block order, each
//     written to `partials` with a flag by its block) and then its own: a fixed order that (N, K,
//     G, blocks, S) decide, never M, so a row's bits do not depend on the other rows.
// partials: [blocks][kHalves][32 lanes][kPieces] float4 (only a block's last column block can be
// another's); flags: [blocks], zero between launches (the owner clears what it read: the next
// launch writes only after its PDL wait, so after this one has ended).
template <bool kTwo, int kChunks, bool kSwiglu, bool kF16>
__device__ __forceinline__ void awq_streamk_block(const void* __restrict__ x, const int* __restrict__ qweight,
                                                  const int* __restrict__ qzeros, const __half* __restrict__ scales,
                                                  const bf16* __restrict__ bias, bf16* out, int M, int N, int K,
                                                  const Norms& norms, float4* partials, unsigned* flags) {
  // [S] rings, [S] warp accumulators, [boundary slots] accumulators of the tiles warps crossed out
  // of; after the loop the rings hold the epilogue's squares [16][64] and a column block's sums.
  extern __shared__ __align__(16) unsigned char smem[];
  using Acc = Accumulators<kTwo>;
  constexpr int kHalves = kSwiglu ? 2 : 1;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  const int groups = K / (32 * kChunks);
  const int units = (N + 63) / 64 * groups;  // (a last tile past N is zero-padded; the host checks it fits)
  const long long all_warps = (long long)gridDim.x * warps;
  auto warp_start = [&](long long w) { return (int)((long long)units * w / all_warps); };  // warp w's first unit
  auto warp_of = [&](int u) { return (int)((((long long)u + 1) * all_warps - 1) / units); };  // the warp holding unit u
  const int block_start = warp_start((long long)blockIdx.x * warps), block_end = warp_start((long long)(blockIdx.x + 1) * warps);
  const int first_tile = block_start / groups;  // the block's first logical tile: boundary slot 0's
  __shared__ int starts[33];  // the block's warp w's first unit at w, its end at S (read after the loop)
  if (threadIdx.x <= warps) starts[threadIdx.x] = warp_start((long long)blockIdx.x * warps + threadIdx.x);
  // A logical tile's place in the weight's tiles.
  auto weight_tile = [&](int t) { return kSwiglu ? (t >> 1) + (t & 1) * (N / 128) : t; };

  unsigned char* ring = smem + warp * AWQ_RING_BYTES;
  const unsigned ring_s = shared_address(ring);
  const unsigned meta_s = ring_s + AWQ_STAGES * AWQ_STAGE_BYTES;
  const LaneConstants c = lane_constants_once(ring, lane, M, K);
  float4* const warp_sums = reinterpret_cast<float4*>(smem + warps * AWQ_RING_BYTES);  // [S][32][kPieces]
  float4* const boundary = warp_sums + warps * 32 * Acc::kPieces;                         // [slots][32][kPieces]
  float4* acc = warp_sums + (warp * 32 + lane) * Acc::kPieces;
#pragma unroll
  for (int v = 0; v < Acc::kPieces; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);

  const int start = warp_start((long long)blockIdx.x * warps + warp), end = warp_start((long long)blockIdx.x * warps + warp + 1);
  const int mine = end - start, chunks = mine * kChunks;
  // Copies: where the next group to copy sits (its codes, this lane's 16 bytes of its meta), advanced
  // a group at a time: a weight tile's groups are consecutive in qweight, qzeros and scales, and so
  // are consecutive tiles, but for kSwiglu's gate / up pairs, where the next tile is repositioned.
  const unsigned meta_group_bytes = lane < 8 ? 128 : 32;
  const unsigned char* const meta_base = lane < 8 ? reinterpret_cast<const unsigned char*>(scales) + 16 * lane
                                                  : reinterpret_cast<const unsigned char*>(qzeros) + 16 * (lane - 8);
  int copy_tile = start / groups, copy_in_tile = start - copy_tile * groups;  // the next group to copy
  const unsigned char* copy_group;
  const unsigned char* meta_next;
  auto copy_position = [&]() {  // copy_group and meta_next at (copy_tile, copy_in_tile)
    const size_t at = (size_t)weight_tile(copy_tile) * groups + copy_in_tile;  // the group among the weight's
    copy_group = reinterpret_cast<const unsigned char*>(qweight) + at * kChunks * 1024 + c.copy_src;
    meta_next = meta_base + at * meta_group_bytes;
  };
  copy_position();
  auto copy_chunk = [&](int p, int ordinal, unsigned stage) {
    copy16(stage + c.copy_dst, copy_group + 1024 * p);
    copy16(stage + copy_dst16(c.copy_dst), copy_group + 1024 * p + 512);
    if (p == 0) {
      if (lane < 10) copy16(meta_s + (unsigned)(ordinal & (AWQ_STAGES - 1)) * AWQ_META_BYTES + 16 * lane, meta_next);
      meta_next += meta_group_bytes;
    }
    if (p == kChunks - 1) {
      copy_group += kChunks * 1024;
      if (kSwiglu && ++copy_in_tile == groups) copy_in_tile = 0, ++copy_tile, copy_position();
    }
  };
#pragma unroll
  for (int p = 0; p < AWQ_STAGES - 1; ++p) {  // chunks 0 .. STAGES - 2 into stages 0 .. STAGES - 2
    if (p < chunks) copy_chunk(p % kChunks, p / kChunks, ring_s + p * AWQ_STAGE_BYTES);
    copies_commit();
  }
  pdl_start();  // after the weights' first copies, as awq_gemm_block
  if (norms.row_sums != nullptr && threadIdx.x < K / 128)
    asm volatile("prefetch.global.L1 [%0];\n" ::"l"(norms.row_sums + 32 * threadIdx.x));

  // x: row g (g + 8) of a group's chunk p; at M <= 8 a chunk ahead, from the group after x_group.
  const unsigned char* x_bytes = reinterpret_cast<const unsigned char*>(x);
  uint4 xs[2];
  xs[0] = xs[1] = make_uint4(0u, 0u, 0u, 0u);
  int tile = start / groups, group = start - tile * groups;  // the unit the loop is on
  int x_group = group;  // M <= 8: the group of the next chunk x_next loads
  const unsigned char* x_next = x_bytes + c.x_row + x_group * (kChunks * 64);
  auto load_x_next = [&](int p, uint4& v) {
    v = load16_l1(x_next);
    x_next += 64;
    if (p == kChunks - 1 && ++x_group == groups) x_group = 0, x_next = x_bytes + c.x_row;  // the next tile's first
  };
  if (!kTwo && chunks > 0) load_x_next(0, xs[0]);
  for (int i = 0; i < mine; ++i) {
    sum_group<kTwo, kChunks, kF16>(
        i, chunks, ring_s, c, xs, acc, lane, copy_chunk,
        [&](int p, unsigned row) { return load16_l1(x_bytes + (group * (kChunks * 64) + 64 * p + row)); }, load_x_next);
    if (++group == groups && i + 1 < mine) {  // on into the next tile: this one's sums to its boundary slot
      float4* slot = boundary + ((tile - first_tile) * 32 + lane) * Acc::kPieces;
#pragma unroll
      for (int v = 0; v < Acc::kPieces; ++v) slot[v] = acc[v], acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
      group = 0, ++tile;
    }
  }
  copies_wait<0>();
  __syncthreads();

  __shared__ float row_scale[16];  // the RMSNorm before this GEMM, per row (where norms.row_sums)
  norm_row_scales(norms, M, K, row_scale);
  float* squares = reinterpret_cast<float*>(smem);                         // [16][64], in the rings
  float4* column_sums = reinterpret_cast<float4*>(smem + 16 * 64 * 4);      // [kHalves][32][kPieces], after them
  const Epilogue ep{norms.row_sums != nullptr ? row_scale : nullptr, kSwiglu ? nullptr : norms.residual,
                    kSwiglu ? nullptr : norms.next_norm, norms.next_x, squares, norms.half_out, norms.next_x_scale};
  constexpr int kPieceCount = kHalves * 32 * Acc::kPieces;  // a column block's pieces
  // This block's sums of a column block into column_sums, a thread a piece: logical tile t's warps in
  // order, each from its own slot, or (the last, where it went on past t) from t's boundary slot;
  // zero where the block holds none of t.
  auto block_sums = [&](int column) {
    for (int q = threadIdx.x; q < kPieceCount; q += blockDim.x) {
      const int h = q / (32 * Acc::kPieces), l = q & 31, jb = (q >> 5) % Acc::kPieces;  // jb: 2 j + b, or j
      const int piece = Acc::piece(kTwo ? jb >> 1 : jb, kTwo ? jb & 1 : 0, l);
      const int t = column * kHalves + h;
      const int from = max(t * groups, block_start), to = min((t + 1) * groups, block_end);  // the block's units of t
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
      if (from < to) {
        int first = 0, last;  // the warps holding units `from` and to - 1
        while (starts[first + 1] <= from) ++first;
        for (last = first; starts[last + 1] < to; ++last) {}
        const bool last_crossed = starts[last + 1] > to;
        for (int w = first; w <= last; ++w) {
          const float4 a = w == last && last_crossed ? boundary[((t - first_tile) * 32 + l) * Acc::kPieces + piece]
                                                     : warp_sums[(w * 32 + l) * Acc::kPieces + piece];
          if (w == first) sum = a;
          else sum.x += a.x, sum.y += a.y, sum.z += a.z, sum.w += a.w;
        }
      }
      column_sums[(h * 32 + l) * Acc::kPieces + piece] = sum;
    }
  };
  const int first_column = first_tile / kHalves, last_column = (block_end - 1) / groups / kHalves;
  // A last column block that a later block finishes: its partial and flag first, so that no block
  // waits on one that is itself waiting (owners waited in a chain through every block: NOTES v252).
  const bool shares_last = (last_column + 1) * kHalves * groups > block_end;
  if (shares_last) {
    block_sums(last_column);
    __syncthreads();
    float4* published = partials + (size_t)blockIdx.x * kPieceCount;
    for (int q = threadIdx.x; q < kPieceCount; q += blockDim.x) __stcg(published + q, column_sums[q]);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flags + blockIdx.x), "r"(1u) : "memory");
  }
  for (int column = first_column; column <= last_column - (shares_last ? 1 : 0); ++column) {
    block_sums(column);
    // The owner: the earlier blocks' partials (block order), then its own.
    const int first_block = warp_of(column * kHalves * groups) / warps;
    if (first_block < (int)blockIdx.x) {
      if (threadIdx.x == 0) {
        for (int b = first_block; b < (int)blockIdx.x; ++b) {
          unsigned ready = 0;
          do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(ready) : "l"(flags + b) : "memory");
          while (ready == 0);
          flags[b] = 0u;  // read once: clear for the next launch
        }
      }
      __syncthreads();  // every thread after the acquires: the partials are visible
      for (int q = threadIdx.x; q < kPieceCount; q += blockDim.x) {
        float4 sum = __ldcg(partials + (size_t)first_block * kPieceCount + q);
        for (int b = first_block + 1; b < (int)blockIdx.x; ++b) {
          const float4 a = __ldcg(partials + (size_t)b * kPieceCount + q);
          sum.x += a.x, sum.y += a.y, sum.z += a.z, sum.w += a.w;
        }
        const float4 own = column_sums[q];
        sum.x += own.x, sum.y += own.y, sum.z += own.z, sum.w += own.w;
        column_sums[q] = sum;  // only this thread touches piece q
      }
    }
    __syncthreads();
    // One thread an output element: the column block's sums, one rounding, the epilogue.
    for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
      if (!kTwo && ((e >> 7) & 1)) continue;
      const int l = e & 31, r = (e >> 5) & 3, piece = Acc::piece(e >> 8, (e >> 7) & 1, l);
      float v[kHalves];
#pragma unroll
      for (int h = 0; h < kHalves; ++h)
        v[h] = reinterpret_cast<const float*>(column_sums + (h * 32 + l) * Acc::kPieces + piece)[r];
      store_output<kSwiglu, kF16>(v, e, column, bias, out, M, N, ep);
    }
    __syncthreads();
    if (ep.next_norm != nullptr) {
      store_next_sums(squares, norms.next_sums, M, N, column);
      __syncthreads();
    }
  }
}
