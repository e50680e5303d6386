// Row-invariant small-M GEMM: out[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]), 1 <= M <= 16, bf16 in,
// fp32 accumulation, rounded once to bf16 (swiftspec_core/kernels/gemm.py launches it); optionally
// with the RMSNorm before it (gemm_tile.cuh's NORM) and the residual add after it.
//
// Every call runs the same tensor-core instruction (mma m16n8k16) on 16 rows: rows M..15 of the A
// fragment are zeros. An mma output element depends only on its own A row and the B column, and
// the sequence of mma's (which K chunks, in which order, and how the warps' partial sums are added)
// is decided by (N, K) alone: the launch shape comes from plan() in gemm.py, never from M. So a
// row's bits do not depend on M, on its row index, or on the other rows.
//
// The main loop and the combine (the layout of the work) are in gemm_tile.cuh, which the fused
// epilogues (gemm_swiglu.cu, gemm_allreduce.cu) share; here a block's NT tiles are the columns
// n0 .. n0 + NT * 8 - 1.
#include "gemm_tile.cuh"

template <int NT, int U, bool NORM>
__device__ __forceinline__ void gemm_tile(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                          const bf16* __restrict__ bias, const bf16* __restrict__ norm_w,
                                          const bf16* residual, bf16* out, int M, int N, int K, float eps) {
  extern __shared__ float partial[];  // [S][NT * 4][32]: each warp's accumulators, by lane (+ [S][16])
  const int n0 = column_tile<NT, U, NORM>(x, w, M, N, K, partial, norm_w);

  // One thread per output element of the tile: warps 0..S-1 added in order, with NORM times the
  // row's scale, then the bias, then one rounding; with a residual, that plus the residual's
  // element, rounded once (torch's bf16 add; out may be the residual: an element is read and
  // written by one thread).
  for (int e = threadIdx.x; e < NT * 4 * 32; e += blockDim.x) {
    const int row = tile_row(e), col = n0 + tile_col(e);
    if (row < M && col < N) {
      float v = combined<NT>(partial, e);
      if constexpr (NORM) v *= row_scale<NT>(partial, row, K, eps);
      if (bias != nullptr) v += __bfloat162float(bias[col]);
      bf16 o = __float2bfloat16(v);  // round to nearest even, as torch does
      if (residual != nullptr)
        o = __float2bfloat16(__bfloat162float(residual[(size_t)row * N + col]) + __bfloat162float(o));
      out[(size_t)row * N + col] = o;
    }
  }
}

// gemm_nt{NT}: x @ w^T (+ bias) (+ residual), blocks of up to 16 warps (512 threads), U chunks a
// group; gemm_norm_nt{NT}: rmsnorm(x; norm_w, eps) @ w^T (+ bias) (+ residual), up to 8 warps
// (gemm.py's NORM_MAX_SPLITS) and NORM_U chunks a group, so that its registers fit without spills
// (at U = 4, nt2 took 174 a thread; at 512 threads, 128 with spills). Pointers the variant does not
// use may be null. The shared memory is S * NT * 512 bytes (+ S * 64 + K * 2 with the norm).
#define GEMM_KERNEL(NT, U, NORM_U)                                                                \
  extern "C" __global__ void __launch_bounds__(512) gemm_nt##NT(                                   \
      const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ bias,       \
      const bf16* __restrict__ norm_w, const bf16* residual, bf16* out, int M, int N, int K,       \
      float eps) {                                                                                 \
    gemm_tile<NT, U, false>(x, w, bias, norm_w, residual, out, M, N, K, eps);                      \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(256) gemm_norm_nt##NT(                              \
      const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ bias,       \
      const bf16* __restrict__ norm_w, const bf16* residual, bf16* out, int M, int N, int K,       \
      float eps) {                                                                                 \
    gemm_tile<NT, NORM_U, true>(x, w, bias, norm_w, residual, out, M, N, K, eps);                  \
  }
GEMM_KERNEL(1, 4, 4)
GEMM_KERNEL(2, 4, 2)
GEMM_KERNEL(4, 2, 2)
