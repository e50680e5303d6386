// LL lines (cuda/allreduce.cu's header comment explains them): a 16-byte line of 8 data bytes,
// {data0, flag, data1, flag}, stored to a peer's inbox with one 16-byte volatile store, polled by
// the receiver until both flags show the call's epoch; and the fp32 sum of lines' elements.
// Shared by the kernels that exchange LL lines (allreduce.cu, gemm_allreduce.cu).
#pragma once
#include "common.cuh"

struct Line { unsigned int d0, flag0, d1, flag1; };  // 16 bytes: the unit of a peer store

__device__ __forceinline__ void store_line(Line* p, unsigned int d0, unsigned int d1, unsigned int flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "r"(d0), "r"(flag), "r"(d1), "r"(flag) : "memory");
}

__device__ __forceinline__ Line load_line(const Line* p) {
  Line v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.d0), "=r"(v.flag0), "=r"(v.d1), "=r"(v.flag1) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Wait for a peer's line of this epoch. A peer that never comes (it died, or called with another
// size) would hang the stream forever, graph replays included; after timeout_ns the kernel traps,
// so the process sees a CUDA error instead of a silent hang.
__device__ __forceinline__ Line wait_line(const Line* p, unsigned int epoch, unsigned long long timeout_ns) {
  Line v = load_line(p);
  if (v.flag0 == epoch && v.flag1 == epoch) return v;
  const unsigned long long start = global_ns();
  for (unsigned int spin = 1;; ++spin) {
    v = load_line(p);
    if (v.flag0 == epoch && v.flag1 == epoch) return v;
    if ((spin & 1023u) == 0 && global_ns() - start > timeout_ns) __trap();
  }
}

// A line as the elements it holds, summed in fp32: 4 bf16 (low half of each word first) or 2 fp32.
template <typename T> struct LineSum;

template <> struct LineSum<bf16> {
  float v[4];
  __device__ __forceinline__ void set(uint2 w) {
    v[0] = __uint_as_float(w.x << 16); v[1] = __uint_as_float(w.x & 0xffff0000u);
    v[2] = __uint_as_float(w.y << 16); v[3] = __uint_as_float(w.y & 0xffff0000u);
  }
  __device__ __forceinline__ void add(uint2 w) {
    v[0] += __uint_as_float(w.x << 16); v[1] += __uint_as_float(w.x & 0xffff0000u);
    v[2] += __uint_as_float(w.y << 16); v[3] += __uint_as_float(w.y & 0xffff0000u);
  }
  __device__ __forceinline__ uint2 get() const {
    unsigned int b[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = __bfloat16_as_ushort(__float2bfloat16_rn(v[j]));
    return make_uint2(b[0] | b[1] << 16, b[2] | b[3] << 16);
  }
};

template <> struct LineSum<float> {
  float v[2];
  __device__ __forceinline__ void set(uint2 w) { v[0] = __uint_as_float(w.x); v[1] = __uint_as_float(w.y); }
  __device__ __forceinline__ void add(uint2 w) { v[0] += __uint_as_float(w.x); v[1] += __uint_as_float(w.y); }
  __device__ __forceinline__ uint2 get() const { return make_uint2(__float_as_uint(v[0]), __float_as_uint(v[1])); }
};

// The inboxes through which a fused GEMM + all-reduce block exchanges its output tile (the Python
// classes GemmAllReduce, gemm_epilogue.py, and AWQGemmAllReduce, awq_allreduce.py): in every rank's
// memory [2 halves by epoch parity][world senders][slot lines], peers[r] rank r's as this process
// maps it; epochs[b]: block b's last epoch. Output element (row, col) travels in line
// row * (N / 4) + col / 4 whatever M is.
struct LLTile {
  const unsigned long long* peers;
  unsigned int* epochs;
  int rank, world;
  long long slot;  // lines per (half, sender): 16 * N / 4
  unsigned long long timeout_ns;
};

// The all-reduce of a GEMM block's output tile, columns n0 .. n0 + cols - 1 (cols % 4 == 0) of rows
// 0 .. M - 1 into out [M, N] (N % 4 == 0, 8-byte aligned): tile_line(row, col) is this rank's line of
// 4 bf16 (row, col .. col + 3 of the tile) as its GEMM writes them. The block sends each of its
// lines into slot [epoch parity][this rank] of every peer's inbox, polls its own inbox for the
// peers' lines of the same tile and sums each element in fp32 in rank order starting from rank 0's
// value, rounded once, as allreduce.cu does: bitwise LLAllReduce of the GEMM's output.
// Epoch safety as allreduce.cu argues it: a line's owner is the block of its column tile,
// blockIdx.x, fixed by the instance's launch plan (one inbox per plan), and the block keeps its own
// epoch in epochs[blockIdx.x], so a line of half h is only ever written with its owner's epochs of
// parity h, all distinct; a call that sends only M < 16 rows leaves the other rows' lines with
// older epochs that it never reads. Progress: block b of a rank waits only for block b of its
// peers; blocks start in index order on every GPU, so the lowest waiting block's partners are
// running or done, whatever fits on the GPU at once. Called by every thread of the block once its
// tile is final (after a barrier where tile_line reads shared memory).
template <class TileLine>
__device__ __forceinline__ void allreduce_tile(const TileLine& tile_line, bf16* __restrict__ out, int M, int N,
                                               int n0, int cols, const LLTile& ll) {
  // This call's epoch of the block's lines, read by every thread; thread 0 writes it back at the
  // end, after a barrier that every thread reaches only once it has read it.
  const unsigned int next = ll.epochs[blockIdx.x] + 1u;
  const unsigned int epoch = next == 0u ? 2u : next;  // 0 marks a never-written line; 2 keeps the parity turning

  const long long half = epoch & 1u;
  const long long row_lines = N >> 2;  // 4 bf16 a line
  const int tile_lines = cols >> 2;    // lines of one row of the tile
  const int lines = M * tile_lines;

  // Send: the tile's lines into slot [half][rank] of every peer's inbox.
  for (int i = threadIdx.x; i < lines; i += blockDim.x) {
    const int row = i / tile_lines, col = (i % tile_lines) * 4;
    if (n0 + col >= N) continue;
    const uint2 v = tile_line(row, col);
    const long long line = row * row_lines + ((n0 + col) >> 2);
    for (int r = 0; r < ll.world; ++r) {
      if (r == ll.rank) continue;
      Line* inbox = reinterpret_cast<Line*>(ll.peers[r]);
      store_line(inbox + (half * ll.world + ll.rank) * ll.slot + line, v.x, v.y, epoch);
    }
  }

  // Receive and sum in rank order (this rank's own value from tile_line), one rounding.
  const Line* mine = reinterpret_cast<const Line*>(ll.peers[ll.rank]);
  for (int i = threadIdx.x; i < lines; i += blockDim.x) {
    const int row = i / tile_lines, col = (i % tile_lines) * 4;
    if (n0 + col >= N) continue;
    const long long line = row * row_lines + ((n0 + col) >> 2);
    LineSum<bf16> sum;
    for (int r = 0; r < ll.world; ++r) {
      uint2 v;
      if (r == ll.rank) {
        v = tile_line(row, col);
      } else {
        const Line l = wait_line(mine + (half * ll.world + r) * ll.slot + line, epoch, ll.timeout_ns);
        v = make_uint2(l.d0, l.d1);
      }
      if (r == 0) sum.set(v); else sum.add(v);
    }
    *reinterpret_cast<uint2*>(out + (size_t)row * N + n0 + col) = sum.get();  // 8-byte aligned: N % 4 == 0
  }
  __syncthreads();
  if (threadIdx.x == 0) ll.epochs[blockIdx.x] = epoch;  // read by this block's next call only
}
