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
#include "awq_common.cuh"
#include "awq_lanes.cuh"
#include "ll_line.cuh"

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
// memory, and every 70B GEMM ran 6-10% faster (NOTES v74, v79; why is open: not x's L1 hit rate,
// nor the smaller carveout the driver then picked, v258). Either way a quarter warp's 16-byte
// accesses fall in 8 different 16-byte bank groups.
template <bool kTwo>
struct Accumulators {
  static constexpr int kPieces = kTwo ? 8 : 4;
  static __device__ __forceinline__ int piece(int j, int b, int lane) {
    return kPieces == 8 ? (2 * j + b) ^ (lane & 7) : j ^ ((lane >> 1) & 3);
  }
  // The (j, b) piece p of `lane` holds, as 2 j + b (kTwo) or j (b = 0): piece()'s inverse.
  static __device__ __forceinline__ int unpiece(int p, int lane) {
    return kPieces == 8 ? p ^ (lane & 7) : p ^ ((lane >> 1) & 3);
  }
};

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
  // first rings. On a 128-byte line (dynamic shared memory follows the static, here row_scale's 64
  // bytes): a ring 208 bytes past a line doubled the L2 sectors of every code copy and cost session
  // 45's stream-K kernel ~25% (NOTES v262, v263); at 64 bytes past one the copies took twice their
  // ideal shared wavefronts and nothing measurable (v263), so the alignment is a guard.
  extern __shared__ __align__(128) unsigned char smem[];
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

  // A lane's constants, through the ring's last stage (no chunk lands there before the loop): values
  // ptxas would otherwise recompute from the lane index in the loop. At M <= 8 the copies' two first
  // and the rest after the first copies (NOTES v270); at M > 8 all before them (r16 then spilled).
  LaneConstants c;
  auto load_lane_constants = [&] {
    LaneConstants* slot = reinterpret_cast<LaneConstants*>(ring + (AWQ_STAGES - 1) * AWQ_STAGE_BYTES) + lane;
    *slot = lane_constants(lane, M, K);
    __syncwarp();
    c = *slot;
    __syncwarp();
  };
  if constexpr (kTwo) load_lane_constants(); else copy_constants(c, lane);

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
  const unsigned long long streamed = evict_first_policy();
  auto copy_chunk = [&](int p, int ordinal, unsigned stage) {
    copy16_streamed(stage + c.copy_dst, copy_group + 1024 * p, streamed);
    copy16_streamed(stage + copy_dst16(c.copy_dst), copy_group + 1024 * p + 512, streamed);
    if (p == 0) {
      if (lane < 10)
        copy16_streamed(meta_s + (unsigned)(ordinal & (AWQ_STAGES - 1)) * AWQ_META_BYTES + 16 * lane, meta_next, streamed);
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
  for (int p = 0; p < AWQ_STAGES - 1; ++p) {  // chunks 0 .. STAGES - 2 into stages 0 .. STAGES - 2
    if (p < chunks) copy_chunk(p % kChunks, p / kChunks, stage_of(p));
    copies_commit();
  }
  if constexpr (!kTwo) load_lane_constants();
  // The accumulators zeroed after the copies too (44 KB of stores a block on the 70B o, v261).
#pragma unroll
  for (int v = 0; v < Acc::kPieces; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
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
      const uint4 x_now = kTwo ? x_of(group, p, c.x_row) : xs[p & 1];
      const uint4 x_now8 = kTwo ? x_of(group, p, c.x_row8) : x_now;
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
  copies_wait<0>();  // only empty groups are left; the rings become the cluster's block sums
  __syncthreads();

  // The RMSNorm before this GEMM (x is h * g / x_unit, rounded): row m's r = 1 / sqrt(mean(h^2) + eps),
  // times x_unit (exact: a power of two), from the K / 64 tiles' sums of h^2 the GEMM before wrote,
  // added in a fixed order (lane l: tiles l, l + 32, .., then the butterfly), so a row's r depends on
  // its own h alone.
  __shared__ float row_scale[16];
  if (norms.row_sums != nullptr) {
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
  // The next RMSNorm's sums (kCluster = 1: a block stores its whole tile): out^2 by row and column in
  // the rings, summed a row at a time in column order after the combine.
  float* squares = reinterpret_cast<float*>(smem);
  const Epilogue ep{norms.row_sums != nullptr ? row_scale : nullptr, kSwiglu ? nullptr : norms.residual,
                    kCluster == 1 && !kSwiglu ? norms.next_norm : nullptr, norms.next_x, squares, norms.half_out,
                    norms.next_x_scale};

  constexpr int kHalves = kSwiglu ? 2 : 1;
  float* block_sum = reinterpret_cast<float*>(smem);  // [kHalves][1024], in the rings (kCluster > 1)
  bf16* tile_out = reinterpret_cast<bf16*>(smem);  // kAllReduce: the tile as out gets it, [M][64], in the rings
  // Element e's epilogue from its sums over the block's warps (of the gate and up halves, kSwiglu),
  // where the block holds the whole tile (kCluster = 1; the cluster's blocks sum theirs through
  // block_sum first, each pass writing it as it sums): the bias, one rounding, the stores.
  auto store_element = [&](const float (&v)[kHalves], int e) {
    if constexpr (kAllReduce) store_output<false, kF16>(v, e, 0, nullptr, tile_out, M, 64, Epilogue{});
    else if (kCluster == 1) store_output<kSwiglu, kF16>(v, e, col_block, bias, out, M, N, ep);
  };
  if constexpr (!kTwo) {
    // M <= 8: the combine and the element pass in one (NOTES v265, v266). Thread i takes float f = i
    // (+ the block's threads) of a warp's accumulators, [32 lanes][4 pieces][4] floats: lane l's piece
    // p, float r, which holds element e = (8 j + r) 32 + l, j the piece's (Acc::unpiece). It adds that
    // float over the tile's warps 0..S-1 in order (the combine by pieces' sums, bit for bit) and runs
    // the element's epilogue: (kCluster > 1) the sum to block_sum, else store_element. Consecutive
    // threads read consecutive floats, and every float has its thread at once (the combine by pieces,
    // below, leaves 5 of 6 threads idle at o and hands its sums to a second pass: 0.62 + 0.58 us of
    // thread 0's time on the 70B o, v265).
    constexpr int kWarpFloats = 32 * Acc::kPieces * 4;
    const float* partial = reinterpret_cast<const float*>(smem + warps * AWQ_RING_BYTES);  // [warps][kWarpFloats]
    for (int f = threadIdx.x; f < kWarpFloats; f += blockDim.x) {
      const int l = f / (4 * Acc::kPieces), j = Acc::unpiece((f >> 2) % Acc::kPieces, l), r = f & 3;
      const int e = ((8 * j + r) << 5) + l;
      float v[kHalves];
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
        const float* warp0 = partial + h * splits * kWarpFloats + f;
        float sum = warp0[0];
#pragma unroll 4
        for (int s = 1; s < splits; ++s) sum += warp0[s * kWarpFloats];
        v[h] = sum;
        if (kCluster > 1) block_sum[h * 1024 + e] = sum;
      }
      store_element(v, e);
    }
  } else {  // M > 8: the combine by pieces, then the element pass (the r16 kernels, at their 80
    // registers, spilled with the pass above)
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
    // the loop took ~1.4 us on the 70B o (NOTES v244, v245).
    for (int q = threadIdx.x; q < kHalves * 32 * Acc::kPieces; q += blockDim.x) {
      const int h = q / (32 * Acc::kPieces), l = q & 31, jb = (q >> 5) % Acc::kPieces;  // jb: 2 j + b
      float4* piece = partial + (h * splits * 32 + l) * Acc::kPieces + Acc::piece(jb >> 1, jb & 1, l);
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
    // once): (kCluster > 1) its sums to block_sum, else store_element.
    for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
      float v[kHalves];
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
        v[h] = accumulator(h * splits, e);
        if (kCluster > 1) block_sum[h * 1024 + e] = v[h];
      }
      store_element(v, e);
    }
  }
  if constexpr (kAllReduce) {
    __syncthreads();  // the whole tile in tile_out
    allreduce_tile([&](int row, int col) { return *reinterpret_cast<const uint2*>(tile_out + row * 64 + col); },
                   out, M, N, col_block * 64, 64, ll);
  }
  if (ep.next_norm != nullptr) {
    __syncthreads();
    const unsigned tid = thread_index();
    if (tid < M) {
      float total = 0.f;
      for (int c = 0; c < min(64, N - col_block * 64); ++c) total += squares[tid * 64 + c];
      norms.next_sums[col_block * 16 + tid] = total;
    }
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
