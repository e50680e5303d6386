// The row-parallel AWQ GEMM (o_proj, down_proj of a 4-bit model under tensor parallelism) with the
// LL all-reduce in its epilogue: out[M, N] = sum over the ranks of x_r[M, K] @ W_r^T, W_r this
// rank's K shard of AWQ codes, zeros and scales in awq_gemm.cu's tiled layout, bf16 or fp16 x, bf16
// out, 1 <= M <= 16, the same bits on every rank (swiftspec_core/kernels/awq_allreduce.py).
//
// Bitwise equal to LLAllReduce(awq_gemm(x, w)) at plan(N, K, G, clusters=False) (awq_gemm.cu's
// block at C = 1, then allreduce.cu), in one launch and one NVLink trip, without the all-reduce's
// read of the GEMM's output: a block runs awq_gemm's block on its tile of 64 columns, rounds the
// tile to bf16 into shared memory as awq_gemm writes out, and exchanges it with ll_line.cuh's
// allreduce_tile (the inbox: one AWQGemmAllReduce per N, whose ceil(N / 64) blocks own its lines).
#include "awq_gemm_block.cuh"

// awq_gemm_allreduce[_f16]_r{8,16}_g{G}_c1: awq_gemm's kernel of the same name (c1: one block a tile)
// with the all-reduce. slot: lines per (half, sender) of every inbox (16 * N / 4).
#define AWQ_ALLREDUCE_KERNEL(NAME, F16, ROWS, TWO, G)                                                       \
  extern "C" __global__ void __launch_bounds__(AWQ_THREADS) NAME##_r##ROWS##_g##G##_c1(                     \
      const void* __restrict__ x, const int* __restrict__ qweight, const int* __restrict__ qzeros,         \
      const __half* __restrict__ scales, bf16* out, int M, int N, int K, const unsigned long long* peers,  \
      unsigned int* epochs, int rank, int world, long long slot, unsigned long long timeout_ns) {          \
    awq_gemm_block<1, TWO, G / 32, false, F16, true>(x, qweight, qzeros, scales, nullptr, out, M, N, K,    \
                                                      Norms{}, LLTile{peers, epochs, rank, world, slot,    \
                                                                      timeout_ns});                        \
  }
#define AWQ_ALLREDUCE_OPS(G)                                             \
  AWQ_ALLREDUCE_KERNEL(awq_gemm_allreduce, false, 8, false, G)           \
  AWQ_ALLREDUCE_KERNEL(awq_gemm_allreduce, false, 16, true, G)           \
  AWQ_ALLREDUCE_KERNEL(awq_gemm_allreduce_f16, true, 8, false, G)        \
  AWQ_ALLREDUCE_KERNEL(awq_gemm_allreduce_f16, true, 16, true, G)
AWQ_ALLREDUCE_OPS(32)
AWQ_ALLREDUCE_OPS(64)
AWQ_ALLREDUCE_OPS(128)
