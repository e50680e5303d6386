// The row-parallel GEMM (o_proj, down_proj under tensor parallelism) with the LL all-reduce in its
// epilogue: out[M, N] = sum over the ranks of x_r[M, K] @ w_r[N, K]^T, 1 <= M <= 16, bf16, the
// same bits on every rank (swiftspec_core/kernels/gemm_epilogue.py launches it).
//
// Bitwise equal to LLAllReduce(gemm(x, w)) (cuda/allreduce.cu after cuda/gemm.cu), in one launch
// and one NVLink trip, without the all-reduce's read of the GEMM's output:
//   - a block computes its [M, NT * 8] tile with gemm_tile.cuh's main loop and combine, on gemm's
//     own launch plan (NT, S from gemm.plan(N, K)), and rounds it to bf16 as gemm writes it;
//   - it stores the tile as LL lines (4 bf16 and the epoch flag twice, one 16-byte store: see
//     ll_line.cuh) straight into slot [epoch parity][this rank] of every peer's inbox;
//   - it polls its own inbox for the peers' lines of the same tile and sums each element in fp32
//     in rank order starting from rank 0's value, rounded once, as allreduce.cu does.
//
// The exchange, its inbox (GemmAllReduce in gemm_epilogue.py: one per (N, NT), whose blocks own
// the lines), epochs and progress: ll_line.cuh's allreduce_tile, which awq_gemm_allreduce.cu shares.
#include "gemm_tile.cuh"
#include "ll_line.cuh"

// Columns col .. col + 3 (inside the block's NT * 8) of `row` as gemm writes them: summed over the
// warps, rounded once to bf16; packed as in memory (the lower column in the lower 16 bits).
template <int NT>
__device__ __forceinline__ uint2 tile_line(const float* partial, int row, int col) {
  unsigned int b[4];
#pragma unroll
  for (int q = 0; q < 4; ++q)
    b[q] = __bfloat16_as_ushort(__float2bfloat16(combined<NT>(partial, tile_element(row, col + q))));
  return make_uint2(b[0] | b[1] << 16, b[2] | b[3] << 16);
}

template <int NT, int U>
__device__ __forceinline__ void gemm_allreduce_tile(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                    bf16* __restrict__ out, int M, int N, int K,
                                                    const unsigned long long* peers, unsigned int* epochs,
                                                    int rank, int world, long long slot,
                                                    unsigned long long timeout_ns) {
  extern __shared__ float partial[];  // [S][NT * 4][32]: each warp's accumulators, by lane
  // pdl_wait() inside: the last call has ended; it ends in a barrier: the partials are final.
  const int n0 = column_tile<NT, U, false>(x, w, M, N, K, partial, nullptr);
  allreduce_tile([&](int row, int col) { return tile_line<NT>(partial, row, col); }, out, M, N, n0, NT * 8,
                 LLTile{peers, epochs, rank, world, slot, timeout_ns});
}

// gemm_allreduce_nt{NT}: U as gemm_nt{NT} in gemm.cu; grid ceil(N / (NT * 8)), S warps a block,
// S * NT * 512 bytes of shared memory. slot: lines per (half, sender) of every inbox (16 * N / 4).
#define GEMM_ALLREDUCE_KERNEL(NT, U)                                                                 \
  extern "C" __global__ void __launch_bounds__(512) gemm_allreduce_nt##NT(                            \
      const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ out, int M, int N,     \
      int K, const unsigned long long* peers, unsigned int* epochs, int rank, int world, long long slot, \
      unsigned long long timeout_ns) {                                                                \
    gemm_allreduce_tile<NT, U>(x, w, out, M, N, K, peers, epochs, rank, world, slot, timeout_ns);     \
  }
GEMM_ALLREDUCE_KERNEL(1, 4)
GEMM_ALLREDUCE_KERNEL(2, 4)
GEMM_ALLREDUCE_KERNEL(4, 2)
