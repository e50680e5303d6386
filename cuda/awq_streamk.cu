// The stream-K AWQ GEMM (awq_streamk.cuh's block): awq_gemm.cu's kernels, numerics and epilogues, with
// the (tile, group) units split evenly over one block an SM (swiftspec_core/kernels/awq_streamk.py
// decides where it runs instead of awq_gemm's plan).
#include "awq_streamk.cuh"

// The kernels' __launch_bounds__: S <= 20 warps a block (awq_streamk.py's MAX_SPLITS), one block an
// SM: 5 warps on each of its 4 register files (16 K each) -> 96 registers a lane, where at 80
// (awq_gemm's 768 threads, or 704: still 6 warps on some) the M > 8 kernels spilled 12-48 bytes.
#define AWQ_STREAMK_THREADS 640

// awq_streamk_{gemm,swiglu}[_f16]_r{8,16}_g{G}: bf16 or fp16 x, M <= 8 or M > 8, group size G;
// awq_gemm.cu's arguments, then partials and flags (awq_streamk_block).
#define AWQ_STREAMK_KERNEL(NAME, SWIGLU, F16, ROWS, TWO, G)                                                   \
  extern "C" __global__ void __launch_bounds__(AWQ_STREAMK_THREADS, 1) NAME##_r##ROWS##_g##G(                            \
      const void* __restrict__ x, const int* __restrict__ qweight, const int* __restrict__ qzeros,            \
      const __half* __restrict__ scales, const bf16* __restrict__ bias, bf16* out, int M, int N, int K,       \
      const float* row_sums, const bf16* residual, const bf16* next_norm, void* next_x, float* next_sums,     \
      float eps, float x_unit, float next_x_scale, int half_out, float4* partials, unsigned* flags) {         \
    const Norms norms{row_sums, residual, next_norm, next_x, next_sums, eps, x_unit, next_x_scale, half_out}; \
    awq_streamk_block<TWO, G / 32, SWIGLU, F16>(x, qweight, qzeros, scales, bias, out, M, N, K, norms,       \
                                                partials, flags);                                            \
  }
#define AWQ_STREAMK_ROWS(NAME, SWIGLU, F16, G)             \
  AWQ_STREAMK_KERNEL(NAME, SWIGLU, F16, 8, false, G)       \
  AWQ_STREAMK_KERNEL(NAME, SWIGLU, F16, 16, true, G)
#define AWQ_STREAMK_OPS(G)                                     \
  AWQ_STREAMK_ROWS(awq_streamk_gemm, false, false, G)          \
  AWQ_STREAMK_ROWS(awq_streamk_gemm_f16, false, true, G)       \
  AWQ_STREAMK_ROWS(awq_streamk_swiglu, true, false, G)         \
  AWQ_STREAMK_ROWS(awq_streamk_swiglu_f16, true, true, G)
AWQ_STREAMK_OPS(32)
AWQ_STREAMK_OPS(64)
AWQ_STREAMK_OPS(128)
