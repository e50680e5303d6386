// Row-invariant small-M GEMM: out[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]), 1 <= M <= 16, bf16 in,
// fp32 accumulation, rounded once to bf16 (swiftspec_core/kernels/gemm.py launches it).
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

template <int NT, int U>
__device__ __forceinline__ void gemm_tile(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                          const bf16* __restrict__ bias, bf16* __restrict__ out,
                                          int M, int N, int K) {
  extern __shared__ float partial[];  // [S][NT * 4][32]: each warp's accumulators, by lane
  const int n0 = column_tile<NT, U>(x, w, M, N, K, partial);

  // One thread per output element of the tile: warps 0..S-1 added in order, then the bias, then
  // one rounding.
  for (int e = threadIdx.x; e < NT * 4 * 32; e += blockDim.x) {
    const int row = tile_row(e), col = n0 + tile_col(e);
    if (row < M && col < N) {
      float v = combined<NT>(partial, e);
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
