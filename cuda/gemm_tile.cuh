// The row-invariant small-M GEMM's main loop and combine, shared by its kernels: gemm.cu (plain
// epilogue, + bias), gemm_swiglu.cu (SwiGLU epilogue) and gemm_allreduce.cu (LL all-reduce
// epilogue). Every kernel built on these gives a column the same bits for the same (K, S): the
// per-warp chunk order and the warp order of the combine depend on nothing else (see gemm.cu).
//
// Layout of the work:
//   block   = S warps on NT tiles of 8 weight rows (output columns); the S warps split K;
//   warp w  = K chunks of 32 elements c = w, w + S, w + 2S, ... (interleaved, so a block's warps
//             read neighbouring bytes of each weight row), in groups of U chunks;
//   lane    = (g, t) = (lane / 4, lane % 4): copies 16 bytes (8 k) of weight row first[j] + g of
//             each tile j into its warp's ring and loads x rows g and g + 8 at k = c*32 + t*8;
//   combine = each warp's fp32 accumulators to shared memory, summed over warps 0..S-1 in order.
//
// The weights stream through a ring of STAGES group slots a warp (cp.async, 16 bytes a lane, each
// lane reading back only its own bytes: no barrier in the loop), so STAGES - 1 groups of a warp are
// in flight while it multiplies one: where the weights went to registers (cur / next), one group
// was, and the 8B gate_up ran at 1.32x its floor, latency-bound at ~2.4 us a group (NOTES v66).
// x (a few KB that every block reads, mostly from L1) still goes to registers one group ahead.
//
// RMSNorm in the GEMM (NORM: qkv and gate_up where forward.norms_in_gemms says so):
// rmsnorm(x) @ w^T = r * ((x * g) @ w^T) row by row, r = 1 / sqrt(mean(x^2) + eps), so a lane
// multiplies the x it loads by the norm weights g (rounded once to bf16, the mma's operand) and
// sums the squares of that x; the block combines the sums like the accumulators (a lane's chunks
// in order, the butterfly over its quad, warps 0..S-1 in order) and its epilogue scales each row
// by r. The norm kernel before the GEMM, its launch and its round trip through memory go, and the
// sums' order, like the products', depends on (K, S) alone (NOTES v57). The block copies g into
// shared memory beside its first weight loads (no kernel writes either): ~1 us a GEMM, which is
// why lm_head (thousands of blocks) and 8B's widths keep the norm kernel (NOTES v59-v61).
#pragma once
#include "common.cuh"
#include "mma.cuh"

// K inside one 32-wide chunk is permuted the same way for A (x) and B (w), which leaves every dot
// product unchanged: the mma's logical k {2t, 2t+1, 2t+8, 2t+9} of lane (g, t) are physical
// k {8t, 8t+1, 8t+2, 8t+3} for the chunk's first mma and {8t+4, .., 8t+7} for its second. So each
// lane's operands are one contiguous 16-byte load per row.

// A 16-byte load, zeros where `ok` is false: one predicated instruction, no branch (with a branch
// around each load, ptxas sank every load down to its mma and kept only one in flight).
#define LOAD16_OR_ZERO(LD)                                                                   \
  "{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"                                            \
  " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"                   \
  " @p " LD " {%0, %1, %2, %3}, [%4];\n}\n"

// x through L1 (every block reads it), zeros where `ok` is false.
__device__ __forceinline__ uint4 load16(const bf16* p, bool ok) {
  uint4 v;
  asm volatile(LOAD16_OR_ZERO("ld.global.nc.v4.u32") : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "r"((int)ok));
  return v;
}

#define GEMM_STAGES 3  // group slots in a warp's ring (gemm.py's STAGES)

// A block's dynamic shared memory (gemm.py's shared_bytes sizes it): the warps' rings [S][STAGES]
// [U][NT][32 lanes] x 16 bytes; once the loop is over, their first S * NT * 512 bytes hold share's
// partial sums [S][NT * 4][32] floats; with NORM then each warp's sums of squares of rows 0..15
// [S][16] floats and the norm weights [K] bf16.
template <int NT, int U>
struct TileShared {
  static constexpr int SLOT = U * NT * 512;  // bytes: one group's weights for a warp
  static constexpr int RING = GEMM_STAGES * SLOT;
  __device__ static float* sums(float* base) { return base + (blockDim.x >> 5) * (RING / 4); }
  __device__ static bf16* norm_weights(float* base) { return reinterpret_cast<bf16*>(sums(base) + (blockDim.x >> 5) * 16); }
};

// x rows g and g + 8 of one group of U chunks.
template <int U>
struct XRows {
  uint4 lo[U], hi[U];
};

// A lane's sums of squares of x rows g and g + 8 over its chunks (NORM).
struct SquareSums {
  float lo = 0.f, hi = 0.f;
};

// s plus the squares of 8 bf16, in order (fma: one rounding each, the same instruction everywhere).
__device__ __forceinline__ float add_squares(const uint4& v, float s) {
  const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&words[i]));
    s = fmaf(f.x, f.x, s);
    s = fmaf(f.y, f.y, s);
  }
  return s;
}

// x * g elementwise, each product rounded once to bf16 (exact in fp32 first: bf16(x * g) as torch).
__device__ __forceinline__ uint4 times_weights(const uint4& x, const uint4& g) {
  uint4 y;
  const __nv_bfloat162* a = reinterpret_cast<const __nv_bfloat162*>(&x);
  const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&g);
  __nv_bfloat162* c = reinterpret_cast<__nv_bfloat162*>(&y);
#pragma unroll
  for (int i = 0; i < 4; ++i) c[i] = __hmul2(a[i], b[i]);
  return y;
}

// 16 bytes of shared memory at a shared-window address, volatile with a memory clobber: it stays
// after the wait for the copies that wrote it.
__device__ __forceinline__ uint4 load_shared16(unsigned address) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address) : "memory");
  return v;
}

// acc[j] (the mma's d fragment: rows g, g + 8, columns 2t, 2t + 1 of tile j) = x[0..M) @ the
// weight rows first[j] .. first[j] + 7 over this warp's K chunks; rows at or past end[j] read as
// zeros. Calls pdl_start() (after the first STAGES - 1 groups' weight copies, before x). With NORM,
// x * norm_w in place of x (norm_w [K] copied to shared memory first), and `squares` the lane's
// sums of squares of x. NT: 8-column tiles per warp (one x load serves NT weight fragments); U:
// chunks per group (a ring slot). smem: the block's dynamic shared memory (TileShared's layout).
template <int NT, int U, bool NORM>
__device__ __forceinline__ void accumulate(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                           const int (&first)[NT], const int (&end)[NT], int M, int K,
                                           float (&acc)[NT][4], const bf16* __restrict__ norm_w,
                                           float* smem, SquareSums& squares) {
  using Shared = TileShared<NT, U>;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int splits = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int chunks = (K + 31) >> 5;
  const int step = splits * U;  // chunks from one of the warp's groups to its next
  bf16* norm_smem = Shared::norm_weights(smem);
  // This lane's 16 bytes of (chunk u, tile j) in slot 0 of the warp's ring; slot s is + s * SLOT.
  const unsigned ring = shared_address(smem) + warp * Shared::RING + lane * 16;

  const bf16* w_row[NT];
  bool w_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = first[j] + g;
    w_ok[j] = n < end[j];
    w_row[j] = w + (size_t)(w_ok[j] ? n : 0) * K + t * 8;
  }
  // Rows M..15 are zeros in the A fragment (never loaded), so padding costs no memory traffic.
  const bool lo_ok = g < M, hi_ok = g + 8 < M;
  const bf16* x_lo = x + (size_t)(lo_ok ? g : 0) * K + t * 8;
  const bf16* x_hi = x + (size_t)(hi_ok ? g + 8 : 0) * K + t * 8;

  // Chunk c0 + u S: whether it lies inside K (chunks past K are zeros), and its first k.
  auto chunk = [&](int c0, int u, int& k) {
    const int c = c0 + u * splits;
    const bool in_k = c < chunks && c * 32 + t * 8 < K;  // K % 8 == 0: a lane's 8 are all in or out
    k = in_k ? c * 32 : 0;
    return in_k;
  };
  // The group of chunks c0, c0 + S, .., c0 + (U-1) S into ring slot `slot` (zeros past K or past a
  // tile's rows: nothing read), committed as one group of copies, empty past the warp's last group.
  auto copy_weights = [&](int c0, int slot) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int k;
      const bool in_k = chunk(c0, u, k);
#pragma unroll
      for (int j = 0; j < NT; ++j)
        copy16_or_zero(ring + slot * Shared::SLOT + (u * NT + j) * 512, w_row[j] + k, in_k && w_ok[j]);
    }
    copies_commit();
  };
  auto load_x = [&](XRows<U>& o, int c0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int k;
      const bool in_k = chunk(c0, u, k);
      o.lo[u] = load16(x_lo + k, in_k && lo_ok);
      o.hi[u] = load16(x_hi + k, in_k && hi_ok);
    }
  };

#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  // No kernel writes the weights or the norm weights: their first copies overlap the previous
  // kernel. The norm weights' group is the oldest, so it has landed once STAGES - 1 are pending.
  if constexpr (NORM) {
    for (int i = threadIdx.x; i < K / 8; i += blockDim.x)
      copy16(shared_address(norm_smem + 8 * i), norm_w + 8 * i);
    copies_commit();
  }
#pragma unroll
  for (int s = 0; s < GEMM_STAGES - 1; ++s) copy_weights(warp + s * step, s);
  pdl_start();
  XRows<U> cur, next;
  load_x(cur, warp);
  if constexpr (NORM) {
    copies_wait<GEMM_STAGES - 1>();
    __syncthreads();
  }
  // c0 is warp-uniform, so mma.sync always runs with all 32 lanes. The mma's are unguarded: a
  // chunk past K holds zeros and adds nothing (+0 to an accumulator that starts at +0 and so is
  // never -0), and which chunks exist depends on (K, S) only: U changes how many such zero chunks
  // run, never a bit of the result. Each iteration first refills the slot the last one read (its
  // reads are done: their mma's have issued), so STAGES - 1 groups stay in flight.
  int slot = 0;
  for (int c0 = warp; c0 < chunks; c0 += step) {
    const int fill = slot == 0 ? GEMM_STAGES - 1 : slot - 1;
    copy_weights(c0 + (GEMM_STAGES - 1) * step, fill);
    load_x(next, c0 + step);
    copies_wait<GEMM_STAGES - 1>();  // this group's copies (and every older one) have landed
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if constexpr (NORM) {  // zeros (rows past M, chunks past K) add nothing and stay zeros
        int k;
        chunk(c0, u, k);
        const uint4 g8 = load_shared16(shared_address(norm_smem + min(k + t * 8, K - 8)));  // past K: any (x is 0)
        squares.lo = add_squares(cur.lo[u], squares.lo);
        squares.hi = add_squares(cur.hi[u], squares.hi);
        cur.lo[u] = times_weights(cur.lo[u], g8);
        cur.hi[u] = times_weights(cur.hi[u], g8);
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint4 wj = load_shared16(ring + slot * Shared::SLOT + (u * NT + j) * 512);
        mma_16816(acc[j], cur.lo[u].x, cur.hi[u].x, cur.lo[u].y, cur.hi[u].y, wj.x, wj.y);
        mma_16816(acc[j], cur.lo[u].z, cur.hi[u].z, cur.lo[u].w, cur.hi[u].w, wj.z, wj.w);
      }
    }
    cur = next;
    slot = slot == GEMM_STAGES - 1 ? 0 : slot + 1;
  }
}

// Each warp's accumulators to partial (the start of the block's shared memory, by lane: TileShared's
// layout, once every warp is done with its ring), with NORM its sums of squares of rows 0..15 (over
// its quads by butterfly) to TileShared::sums; then a barrier.
template <int NT, int U, bool NORM>
__device__ __forceinline__ void share(float* partial, const float (&acc)[NT][4], SquareSums squares) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();  // partial overlays other warps' rings
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) partial[(warp * NT * 4 + j * 4 + r) * 32 + lane] = acc[j][r];
  if constexpr (NORM) {
#pragma unroll
    for (int o = 1; o < 4; o <<= 1) {
      squares.lo += __shfl_xor_sync(0xffffffffu, squares.lo, o);
      squares.hi += __shfl_xor_sync(0xffffffffu, squares.hi, o);
    }
    float* sums = TileShared<NT, U>::sums(partial) + warp * 16;
    if ((lane & 3) == 0) sums[lane >> 2] = squares.lo, sums[(lane >> 2) + 8] = squares.hi;
  }
  __syncthreads();
}

// 1 / sqrt(mean(x[row]^2) + eps) from share's sums of squares, added over warps 0..S-1 in order.
template <int NT, int U>
__device__ __forceinline__ float row_scale(float* partial, int row, int K, float eps) {
  const int splits = blockDim.x >> 5;
  const float* sums = TileShared<NT, U>::sums(partial) + row;
  float total = sums[0];
  for (int s = 1; s < splits; ++s) total += sums[s * 16];
  return 1.f / sqrtf(total / (float)K + eps);  // IEEE, as norm.cu
}

// The block's output columns n0 .. n0 + NT * 8 - 1, n0 = blockIdx.x * NT * 8, of x @ w^T (w [N, K];
// columns from N on are zeros; with NORM, (x * norm_w) @ w^T and the rows' sums of squares) as
// per-warp partial sums in partial (share's layout); -> n0.
template <int NT, int U, bool NORM>
__device__ __forceinline__ int column_tile(const bf16* __restrict__ x, const bf16* __restrict__ w, int M, int N,
                                           int K, float* partial, const bf16* __restrict__ norm_w) {
  const int n0 = blockIdx.x * (NT * 8);
  int first[NT], end[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) first[j] = n0 + j * 8, end[j] = N;
  float acc[NT][4];
  SquareSums squares;
  accumulate<NT, U, NORM>(x, w, first, end, M, K, acc, norm_w, partial, squares);
  share<NT, U, NORM>(partial, acc, squares);
  return n0;
}

// The tile's elements are numbered e = (j * 4 + r) * 32 + lane, with lane and r as in the mma's d
// fragment: row (lane / 4) + (r / 2) * 8, column j * 8 + (lane % 4) * 2 + r % 2 of the NT * 8.
__device__ __forceinline__ int tile_row(int e) { return ((e & 31) >> 2) + (((e >> 5) & 3) >> 1) * 8; }
__device__ __forceinline__ int tile_col(int e) { return (e >> 7) * 8 + (e & 3) * 2 + ((e >> 5) & 1); }
__device__ __forceinline__ int tile_element(int row, int col) {
  const int lane = (row & 7) * 4 + ((col & 7) >> 1), r = (row >> 3) * 2 + (col & 1);
  return ((col >> 3) * 4 + r) * 32 + lane;
}

// Element e summed over warps 0..S-1 in order (fp32, before any bias or rounding).
template <int NT>
__device__ __forceinline__ float combined(const float* partial, int e) {
  const int splits = blockDim.x >> 5;
  float v = partial[e];
  for (int s = 1; s < splits; ++s) v += partial[s * NT * 128 + e];
  return v;
}
