// The row-invariant small-M GEMM's main loop and combine, shared by its kernels: gemm.cu (plain
// epilogue, + bias), gemm_swiglu.cu (SwiGLU epilogue) and gemm_allreduce.cu (LL all-reduce
// epilogue). Every kernel built on these gives a column the same bits for the same (K, S): the
// per-warp chunk order and the warp order of the combine depend on nothing else (see gemm.cu).
//
// Layout of the work:
//   block   = S warps on NT tiles of 8 weight rows (output columns); the S warps split K;
//   warp w  = K chunks of 32 elements c = w, w + S, w + 2S, ... (interleaved, so a block's warps
//             read neighbouring bytes of each weight row), loaded U chunks at a time;
//   lane    = (g, t) = (lane / 4, lane % 4): loads 16 bytes (8 k) of weight row first[j] + g of
//             each tile j and of x rows g and g + 8 at k = c*32 + t*8;
//   combine = each warp's fp32 accumulators to shared memory, summed over warps 0..S-1 in order.
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

// Weights are read once: kept out of L1 (kWeights) so that x, read by every block, stays there.
template <bool kWeights>
__device__ __forceinline__ uint4 load16(const bf16* p, bool ok) {
  uint4 v;
  if constexpr (kWeights)
    asm volatile(LOAD16_OR_ZERO("ld.global.nc.L1::no_allocate.v4.u32")
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "r"((int)ok));
  else
    asm volatile(LOAD16_OR_ZERO("ld.global.nc.v4.u32")
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "r"((int)ok));
  return v;
}

// One group of U chunks of a warp's operands: weights of NT column tiles, x rows g and g + 8.
template <int NT, int U>
struct Operands {
  uint4 w[U][NT], lo[U], hi[U];
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

// 16 bytes of shared memory (common.cuh's load_shared16_at): it stays after the wait for the copies
// that wrote it, and where it stands among the (volatile) mma's.
__device__ __forceinline__ uint4 load_shared16(const bf16* p) { return load_shared16_at(shared_address(p)); }

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

// acc[j] (the mma's d fragment: rows g, g + 8, columns 2t, 2t + 1 of tile j) = x[0..M) @ the
// weight rows first[j] .. first[j] + 7 over this warp's K chunks; rows at or past end[j] read as
// zeros. Waits for the kernel before (pdl_wait) after the first weight loads, before x, and lets
// the next one launch (pdl_trigger) after the loop. With NORM, x * norm_w in place
// of x (norm_w [K] copied to norm_smem first), and `squares` the lane's sums of squares of x.
// NT: 8-column tiles per warp (one x load serves NT weight loads); U: chunks per group. Each loop
// iteration loads the next group and runs the current one's mma's, so a group's U * NT weight
// loads per lane are issued together and are in flight at once (with a group's loads and its own
// mma's in one iteration, ptxas sank each load down to its mma: one load in flight at a time).
template <int NT, int U, bool NORM>
__device__ __forceinline__ void accumulate(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                           const int (&first)[NT], const int (&end)[NT], int M, int K,
                                           float (&acc)[NT][4], const bf16* __restrict__ norm_w,
                                           bf16* norm_smem, SquareSums& squares) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int splits = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int chunks = (K + 31) >> 5;

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

  // Chunk c0 + u S: whether it lies inside K (chunks past K load zeros), and its first k.
  auto chunk = [&](int c0, int u, int& k) {
    const int c = c0 + u * splits;
    const bool in_k = c < chunks && c * 32 + t * 8 < K;  // K % 8 == 0: a lane's 8 are all in or out
    k = in_k ? c * 32 : 0;
    return in_k;
  };
  // Chunks c0, c0 + S, .., c0 + (U-1) S: the weights apart from x, which a previous kernel writes.
  auto load_weights = [&](Operands<NT, U>& o, int c0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int k;
      const bool in_k = chunk(c0, u, k);
#pragma unroll
      for (int j = 0; j < NT; ++j) o.w[u][j] = load16<true>(w_row[j] + k, in_k && w_ok[j]);
    }
  };
  auto load_x = [&](Operands<NT, U>& o, int c0) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int k;
      const bool in_k = chunk(c0, u, k);
      o.lo[u] = load16<false>(x_lo + k, in_k && lo_ok);
      o.hi[u] = load16<false>(x_hi + k, in_k && hi_ok);
    }
  };

#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  Operands<NT, U> cur, next;
  load_weights(cur, warp);  // no kernel writes weights: their first loads overlap the previous kernel
  if constexpr (NORM) {
    for (int i = threadIdx.x; i < K / 8; i += blockDim.x)
      copy16(shared_address(norm_smem + 8 * i), norm_w + 8 * i);
    copies_commit();
  }
  pdl_wait();
  load_x(cur, warp);
  if constexpr (NORM) {
    copies_wait<0>();
    __syncthreads();
  }
  // c0 is warp-uniform, so mma.sync always runs with all 32 lanes. The mma's are unguarded: a
  // chunk past K holds zeros and adds nothing (+0 to an accumulator that starts at +0 and so is
  // never -0), and which chunks exist depends on (K, S) only: U changes how many such zero chunks
  // run, never a bit of the result.
  for (int c0 = warp; c0 < chunks; c0 += splits * U) {
    load_weights(next, c0 + splits * U);
    load_x(next, c0 + splits * U);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if constexpr (NORM) {  // zeros (rows past M, chunks past K) add nothing and stay zeros
        int k;
        chunk(c0, u, k);
        const uint4 g8 = load_shared16(norm_smem + min(k + t * 8, K - 8));  // past K: any (x is 0)
        squares.lo = add_squares(cur.lo[u], squares.lo);
        squares.hi = add_squares(cur.hi[u], squares.hi);
        cur.lo[u] = times_weights(cur.lo[u], g8);
        cur.hi[u] = times_weights(cur.hi[u], g8);
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma_16816(acc[j], cur.lo[u].x, cur.hi[u].x, cur.lo[u].y, cur.hi[u].y, cur.w[u][j].x, cur.w[u][j].y);
        mma_16816(acc[j], cur.lo[u].z, cur.hi[u].z, cur.lo[u].w, cur.hi[u].w, cur.w[u][j].z, cur.w[u][j].w);
      }
    }
    cur = next;
  }
  pdl_trigger();
}

// The block's shared memory (dynamic; gemm.py's combine_bytes sizes it): partial [S][NT * 4][32]
// floats, each warp's accumulators by lane; with NORM then [S][16] floats, each warp's sums of
// squares of rows 0..15, and the norm weights [K] bf16.
template <int NT>
__device__ __forceinline__ bf16* norm_weights_smem(float* partial) {
  return reinterpret_cast<bf16*>(partial + (blockDim.x >> 5) * (NT * 128 + 16));
}

// Each warp's accumulators to partial (shared, by lane), with NORM its sums of squares of rows
// 0..15 (over its quads by butterfly) to the [S][16] after them; then a barrier.
template <int NT, bool NORM>
__device__ __forceinline__ void share(float* partial, const float (&acc)[NT][4], SquareSums squares) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
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
    float* sums = partial + (blockDim.x >> 5) * NT * 128 + warp * 16;
    if ((lane & 3) == 0) sums[lane >> 2] = squares.lo, sums[(lane >> 2) + 8] = squares.hi;
  }
  __syncthreads();
}

// 1 / sqrt(mean(x[row]^2) + eps) from share's sums of squares, added over warps 0..S-1 in order.
template <int NT>
__device__ __forceinline__ float row_scale(const float* partial, int row, int K, float eps) {
  const int splits = blockDim.x >> 5;
  const float* sums = partial + splits * NT * 128 + row;
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
  accumulate<NT, U, NORM>(x, w, first, end, M, K, acc, norm_w, norm_weights_smem<NT>(partial), squares);
  share<NT, NORM>(partial, acc, squares);
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
