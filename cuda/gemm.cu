// Row-invariant small-M GEMM: out[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]), 1 <= M <= 16, bf16 in,
// fp32 accumulation, rounded once to bf16 (swiftspec_core/kernels/gemm.py launches it).
//
// Every call runs the same tensor-core instruction (mma m16n8k16) on 16 rows: rows M..15 of the A
// fragment are zeros. An mma output element depends only on its own A row and the B column, and
// the sequence of mma's (which K chunks, in which order, and how the warps' partial sums are added)
// is decided by (N, K) alone: the launch shape comes from plan() in gemm.py, never from M. So a
// row's bits do not depend on M, on its row index, or on the other rows.
//
// Layout of the work:
//   block   = S warps on one column tile of NT * 8 output columns; the S warps split K;
//   warp w  = K chunks of 32 elements c = w, w + S, w + 2S, ... (interleaved, so a block's warps
//             read neighbouring bytes of each weight row), loaded U chunks at a time;
//   lane    = (g, t) = (lane / 4, lane % 4): loads 16 bytes (8 k) of weight row n0 + j*8 + g and of
//             x rows g and g + 8 at k = c*32 + t*8;
//   combine = each warp's fp32 accumulators to shared memory, summed over warps 0..S-1 in order.
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

// NT: 8-column tiles per warp (one x load serves NT weight loads); U: chunks per group. Each loop
// iteration loads the next group and runs the current one's mma's, so a group's U * NT weight
// loads per lane are issued together and are in flight at once (with a group's loads and its own
// mma's in one iteration, ptxas sank each load down to its mma: one load in flight at a time).
template <int NT, int U>
__device__ __forceinline__ void gemm_tile(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                          const bf16* __restrict__ bias, bf16* __restrict__ out,
                                          int M, int N, int K) {
  extern __shared__ float partial[];  // [S][NT * 4][32]: each warp's accumulators, by lane
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int splits = blockDim.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * (NT * 8);
  const int chunks = (K + 31) >> 5;

  const bf16* w_row[NT];
  bool w_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + j * 8 + g;
    w_ok[j] = n < N;
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

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  Operands<NT, U> cur, next;
  load_weights(cur, warp);  // no kernel writes weights: their first loads overlap the previous kernel
  pdl_start();
  load_x(cur, warp);
  // c0 is warp-uniform, so mma.sync always runs with all 32 lanes. The mma's are unguarded: a
  // chunk past K holds zeros and adds nothing, and which chunks exist depends on (K, S) only.
  for (int c0 = warp; c0 < chunks; c0 += splits * U) {
    load_weights(next, c0 + splits * U);
    load_x(next, c0 + splits * U);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma_16816(acc[j], cur.lo[u].x, cur.hi[u].x, cur.lo[u].y, cur.hi[u].y, cur.w[u][j].x, cur.w[u][j].y);
        mma_16816(acc[j], cur.lo[u].z, cur.hi[u].z, cur.lo[u].w, cur.hi[u].w, cur.w[u][j].z, cur.w[u][j].w);
      }
    cur = next;
  }

#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) partial[(warp * NT * 4 + j * 4 + r) * 32 + lane] = acc[j][r];
  __syncthreads();

  // One thread per output element of the tile: warps 0..S-1 added in order, then the bias, then
  // one rounding. e = (j * 4 + r) * 32 + lane, with lane and r as in the mma's d fragment.
  for (int e = threadIdx.x; e < NT * 4 * 32; e += blockDim.x) {
    const int l = e & 31, j = e >> 7, r = (e >> 5) & 3;
    const int row = (l >> 2) + (r >> 1) * 8;
    const int col = n0 + j * 8 + (l & 3) * 2 + (r & 1);
    if (row < M && col < N) {
      float v = partial[e];
      for (int s = 1; s < splits; ++s) v += partial[s * NT * 128 + e];
      if (bias != nullptr) v += __bfloat162float(bias[col]);
      out[(size_t)row * N + col] = __float2bfloat16(v);  // round to nearest even, as torch does
    }
  }
}

// Block sizes up to 16 warps (512 threads); the shared memory is S * NT * 512 bytes.
#define GEMM_KERNEL(NT, U)                                                                        \
  extern "C" __global__ void __launch_bounds__(512) gemm_nt##NT(                                   \
      const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ bias,       \
      bf16* __restrict__ out, int M, int N, int K) {                                               \
    gemm_tile<NT, U>(x, w, bias, out, M, N, K);                                                    \
  }
GEMM_KERNEL(1, 4)
GEMM_KERNEL(2, 4)
GEMM_KERNEL(4, 2)
