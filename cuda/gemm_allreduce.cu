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
// Inbox (GemmAllReduce in gemm_epilogue.py): [2 halves][world senders][16 rows * N / 4 lines];
// output element (row, col) travels in line row * (N / 4) + col / 4 whatever M is. Epoch safety as
// allreduce.cu argues it: a line's owner is the GEMM block of its column tile, blockIdx.x, fixed by
// (N, NT) (one inbox per (N, NT)), and the block keeps its own epoch in epochs[blockIdx.x], so a
// line of half h is only ever written with its owner's epochs of parity h, all distinct; a call
// that sends only M < 16 rows leaves the other rows' lines with older epochs that it never reads.
//
// Progress: block b of a rank waits only for block b of its peers. Blocks start in index order on
// every GPU, so the lowest waiting block's partners are running or done: the grid never deadlocks,
// whatever fits on the GPU at once (allreduce.cu's grid relies on the same).
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
  const int n0 = column_tile<NT, U, false>(x, w, M, N, K, partial, nullptr);  // pdl_wait() inside: the last call has ended

  // This call's epoch of the block's lines, read by every thread; thread 0 writes it back at the
  // end, after a barrier that every thread reaches only once it has read it.
  const unsigned int next = epochs[blockIdx.x] + 1u;
  const unsigned int epoch = next == 0u ? 2u : next;  // 0 marks a never-written line; 2 keeps the parity turning

  const long long half = epoch & 1u;
  const long long row_lines = N >> 2;  // N % 4 == 0: 4 bf16 a line
  const int tile_lines = NT * 2;       // lines of one row of the tile
  const int lines = M * tile_lines;

  // Send: the tile's lines into slot [half][rank] of every peer's inbox.
  for (int i = threadIdx.x; i < lines; i += blockDim.x) {
    const int row = i / tile_lines, col = (i % tile_lines) * 4;
    if (n0 + col >= N) continue;
    const uint2 v = tile_line<NT>(partial, row, col);
    const long long line = row * row_lines + ((n0 + col) >> 2);
    for (int r = 0; r < world; ++r) {
      if (r == rank) continue;
      Line* inbox = reinterpret_cast<Line*>(peers[r]);
      store_line(inbox + (half * world + rank) * slot + line, v.x, v.y, epoch);
    }
  }

  // Receive and sum in rank order (this rank's own value from shared memory), one rounding.
  const Line* mine = reinterpret_cast<const Line*>(peers[rank]);
  for (int i = threadIdx.x; i < lines; i += blockDim.x) {
    const int row = i / tile_lines, col = (i % tile_lines) * 4;
    if (n0 + col >= N) continue;
    const long long line = row * row_lines + ((n0 + col) >> 2);
    LineSum<bf16> sum;
    for (int r = 0; r < world; ++r) {
      uint2 v;
      if (r == rank) {
        v = tile_line<NT>(partial, row, col);
      } else {
        const Line l = wait_line(mine + (half * world + r) * slot + line, epoch, timeout_ns);
        v = make_uint2(l.d0, l.d1);
      }
      if (r == 0) sum.set(v); else sum.add(v);
    }
    *reinterpret_cast<uint2*>(out + (size_t)row * N + n0 + col) = sum.get();  // 8-byte aligned: N % 4 == 0
  }
  __syncthreads();
  if (threadIdx.x == 0) epochs[blockIdx.x] = epoch;  // read by this block's next call only
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
