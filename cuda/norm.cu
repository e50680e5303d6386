// Fused residual add + RMSNorm, plain RMSNorm and SwiGLU (issue 10): bf16 in and out, fp32 inside.
// Launched from swiftspec_core/kernels/norm.py, which checks shapes and 16-byte alignment
// (D % 8 == 0, F % 8 == 0, contiguous rows) and picks the launch shape from D or F alone.
//
// Row invariance: a norm row is one block whose thread count and chunks per thread depend only on
// D, and its sum of squares runs in one order fixed by that shape (per-thread chunk order, the
// warp butterfly, warps summed in index order), so a row's bits never depend on how many rows
// the call has, its row index or the other rows. SwiGLU is elementwise.
#include "common.cuh"

// The block's total of v, the same bits in every thread: warps reduce by butterfly, then every
// thread adds the warp sums in warp order. All threads of the block must call it.
__device__ __forceinline__ float block_sum(float v, float* warp_sums) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.f;
  const int n_warps = blockDim.x >> 5;
  for (int w = 0; w < n_warps; ++w) total += warp_sums[w];
  return total;
}

// One row of D = 8 * n_chunks elements per block. Thread t owns the 16-byte chunks t, t + blockDim,
// ... (CHUNKS of them at most) and keeps their x in registers between the two passes.
// ADD: x = h + m rounded once to bf16 and written to x_out (x_out may be h: every chunk is read and
// written by the same thread). Without ADD, x = h and x_out, m are unused.
// y = x * rsqrt(mean(x^2) + eps) * w in fp32, rounded once (y_out may be m, for the same reason).
template <int CHUNKS, bool ADD>
__device__ __forceinline__ void norm_row(const bf16* h, const bf16* m, const bf16* w, bf16* x_out,
                                         bf16* y_out, int n_chunks, float eps) {
  __shared__ float warp_sums[32];
  const long long base = (long long)blockIdx.x * n_chunks;  // the row's first chunk
  const bf16x8* h8 = reinterpret_cast<const bf16x8*>(h) + base;
  bf16x8* y8 = reinterpret_cast<bf16x8*>(y_out) + base;
  const bf16x8* w8 = reinterpret_cast<const bf16x8*>(w);
  // The weights first: no kernel writes them, so their trip to DRAM runs under the kernel before
  // (after the reduction it was one more round trip on the forward's path). Not at 4 chunks a
  // thread (D > 16384), where holding them spills under the 1024-thread bound's 64 registers.
  constexpr bool kEarly = CHUNKS <= 2;
  bf16x8 wc[CHUNKS];
#pragma unroll
  for (int j = 0; j < CHUNKS; ++j) {
    const int c = threadIdx.x + j * blockDim.x;
    if (kEarly && c < n_chunks) wc[j] = w8[c];
  }
  pdl_start();

  float2 x[CHUNKS][4];
  float sum_sq = 0.f;
#pragma unroll
  for (int j = 0; j < CHUNKS; ++j) {
    const int c = threadIdx.x + j * blockDim.x;
    if (c < n_chunks) {
      bf16x8 xc = h8[c];
      if (ADD) {
        const bf16x8 mc = reinterpret_cast<const bf16x8*>(m)[base + c];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float2 a = __bfloat1622float2(xc.h[k]), b = __bfloat1622float2(mc.h[k]);
          xc.h[k] = __floats2bfloat162_rn(a.x + b.x, a.y + b.y);  // torch's bf16 add: one rounding
        }
        reinterpret_cast<bf16x8*>(x_out)[base + c] = xc;
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        x[j][k] = __bfloat1622float2(xc.h[k]);
        sum_sq += x[j][k].x * x[j][k].x;
        sum_sq += x[j][k].y * x[j][k].y;
      }
    }
  }
  const float total = block_sum(sum_sq, warp_sums);
  const float r = 1.f / sqrtf(total / (float)(8 * n_chunks) + eps);  // IEEE, as the references
#pragma unroll
  for (int j = 0; j < CHUNKS; ++j) {
    const int c = threadIdx.x + j * blockDim.x;
    if (c < n_chunks) {
      if (!kEarly) wc[j] = w8[c];
      bf16x8 yc;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 wf = __bfloat1622float2(wc[j].h[k]);
        yc.h[k] = __floats2bfloat162_rn(x[j][k].x * r * wf.x, x[j][k].y * r * wf.y);
      }
      y8[c] = yc;
    }
  }
}

// Grid: one block per row; block: norm.py's norm_launch(D) (a multiple of 32, at most 1024).
#define NORM_KERNELS(CHUNKS)                                                                       \
  extern "C" __global__ void __launch_bounds__(1024)                                               \
      add_rmsnorm_c##CHUNKS(const bf16* h, const bf16* m, const bf16* w, bf16* x_out, bf16* y_out, \
                            int n_chunks, float eps) {                                             \
    norm_row<CHUNKS, true>(h, m, w, x_out, y_out, n_chunks, eps);                                  \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(1024)                                               \
      rmsnorm_c##CHUNKS(const bf16* x, const bf16* w, bf16* y_out, int n_chunks, float eps) {      \
    norm_row<CHUNKS, false>(x, nullptr, w, nullptr, y_out, n_chunks, eps);                         \
  }
NORM_KERNELS(1)
NORM_KERNELS(2)
NORM_KERNELS(4)

// out[t, f] = silu(gate_up[t, f]) * gate_up[t, F + f] in fp32, rounded once. One thread per 8
// outputs; grid covers T * F / 8 threads. f_chunks = F / 8.
extern "C" __global__ void __launch_bounds__(256)
    swiglu(const bf16* gate_up, bf16* out, int n_rows, int f_chunks) {
  pdl_start();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n_rows * f_chunks) return;
  const long long row = i / f_chunks;
  const bf16x8* gate = reinterpret_cast<const bf16x8*>(gate_up) + row * 2 * f_chunks;  // [2F] row
  const bf16x8 g = gate[i - row * f_chunks], u = gate[i - row * f_chunks + f_chunks];
  bf16x8 o;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 gf = __bfloat1622float2(g.h[k]), uf = __bfloat1622float2(u.h[k]);
    // silu(x) = x / (1 + exp(-x)), as torch computes it; expf, not __expf (no fast math).
    o.h[k] = __floats2bfloat162_rn(gf.x / (1.f + expf(-gf.x)) * uf.x, gf.y / (1.f + expf(-gf.y)) * uf.y);
  }
  reinterpret_cast<bf16x8*>(out)[i] = o;
}
