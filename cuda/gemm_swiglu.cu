// The gate_up GEMM with SwiGLU in its epilogue: out[M, F] = silu(gate) * up, where
// [gate | up] = x[M, K] @ w[2F, K]^T (gate = weight rows 0..F-1, up = rows F..2F-1, the engine's
// w_gate_up), 1 <= M <= 16 (swiftspec_core/kernels/gemm_epilogue.py launches it).
//
// Bitwise equal to swiglu(gemm(x, w)) (cuda/norm.cu after cuda/gemm.cu), without writing and
// re-reading the [M, 2F] intermediate, one launch instead of two:
//   - a block's NT tiles are NT / 2 tiles of gate columns f0 .. f0 + NT * 4 - 1 and the same NT / 2
//     tiles of up (weight rows F + f0 ..), so its epilogue holds both factors of each output;
//   - a gate or up column's fp32 sum comes from gemm_tile.cuh's main loop and combine with the S
//     that gemm itself runs on the [2F, K] weight (gemm_epilogue.py takes S from gemm.plan(2F, K)):
//     its bits depend on (K, S) only, so they equal gemm's output before its rounding;
//   - each is rounded to bf16 as gemm's epilogue does, then norm.cu's swiglu arithmetic runs on the
//     two bf16 values: silu in fp32 (x / (1 + expf(-x)), no fast math), times up, rounded once.
#include "gemm_tile.cuh"

template <int NT, int U, bool NORM>
__device__ __forceinline__ void gemm_swiglu_tile(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                 const bf16* __restrict__ norm_w, bf16* __restrict__ out,
                                                 int M, int F, int K, float eps) {
  static_assert(NT % 2 == 0, "a block takes as many gate tiles as up tiles");
  constexpr int H = NT / 2;          // tiles of gate (and of up) per block
  extern __shared__ float partial[];  // [S][NT * 4][32]: each warp's accumulators, by lane
  const int f0 = blockIdx.x * (H * 8);
  int first[NT], end[NT];
#pragma unroll
  for (int j = 0; j < H; ++j) {
    first[j] = f0 + j * 8, end[j] = F;                // gate rows f0 + j * 8 ..
    first[H + j] = F + f0 + j * 8, end[H + j] = 2 * F;  // the up rows of the same columns
  }
  float acc[NT][4];
  SquareSums squares;
  accumulate<NT, U, NORM>(x, w, first, end, M, K, acc, norm_w, norm_weights_smem<NT>(partial), squares);
  share<NT, NORM>(partial, acc, squares);

  // One thread per output element: gate element e (tiles 0..H-1), its up element e + H * 128 (tile
  // j + H, same fragment position, so the same row and column).
  for (int e = threadIdx.x; e < H * 128; e += blockDim.x) {
    const int row = tile_row(e), col = f0 + tile_col(e);
    if (row < M && col < F) {
      const float scale = NORM ? row_scale<NT>(partial, row, K, eps) : 1.f;  // as gemm_norm's
      const bf16 gate = __float2bfloat16(combined<NT>(partial, e) * scale);  // as gemm writes it
      const bf16 up = __float2bfloat16(combined<NT>(partial, e + H * 128) * scale);
      out[(size_t)row * F + col] = silu_times(gate, up);
    }
  }
}

// gemm_swiglu_nt{NT}: NT / 2 gate tiles and NT / 2 up tiles a block; U as gemm_nt{NT} in gemm.cu;
// gemm_swiglu_norm_nt{NT}: the same of rmsnorm(x; norm_w, eps) (norm_w null in the first), with
// gemm_norm_nt{NT}'s block bound and NORM_U. The shared memory is S * NT * 512 bytes (+ S * 64 +
// K * 2 with the norm).
#define GEMM_SWIGLU_KERNEL(NT, U, NORM_U)                                                         \
  extern "C" __global__ void __launch_bounds__(512) gemm_swiglu_nt##NT(                            \
      const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ norm_w,     \
      bf16* __restrict__ out, int M, int F, int K, float eps) {                                    \
    gemm_swiglu_tile<NT, U, false>(x, w, norm_w, out, M, F, K, eps);                               \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(256) gemm_swiglu_norm_nt##NT(                       \
      const bf16* __restrict__ x, const bf16* __restrict__ w, const bf16* __restrict__ norm_w,     \
      bf16* __restrict__ out, int M, int F, int K, float eps) {                                    \
    gemm_swiglu_tile<NT, NORM_U, true>(x, w, norm_w, out, M, F, K, eps);                           \
  }
GEMM_SWIGLU_KERNEL(2, 4, 2)
GEMM_SWIGLU_KERNEL(4, 2, 2)
