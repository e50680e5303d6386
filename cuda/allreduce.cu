// One-shot low-latency all-reduce among the GPUs of one node over CUDA IPC peer memory (NCCL's LL).
//
// The message is cut into 16-byte lines of 8 data bytes; on the wire a line is {data0, flag,
// data1, flag}, stored to a peer with one 16-byte volatile store. The hardware writes each aligned
// 8-byte half at once, so a receiver that sees both flags equal to this call's epoch has both data
// words of this call: no fence, no separate flag write, one NVLink trip.
//
// Inbox of a rank (cudaMalloc'd, shared by IPC): [2 halves by epoch parity][world senders][lines].
// Block b always owns lines [b * chunk, (b + 1) * chunk) whatever the message size, and keeps its
// own epoch in device memory (epochs[b], raised by the block itself, so CUDA graph replays advance
// it). A line of half h is thus only ever written with block b's epochs of parity h, all distinct:
// an old line can never pass for a new one. Why two halves: a rank reaching call e has seen every
// peer's data of call e - 1, which a peer writes only after its call e - 2 (same parity) is done,
// so nothing a slow peer still has to read is ever overwritten.
//
// Exactness: each element is summed in fp32 in rank order 0..world-1 starting from rank 0's value
// (not from 0.0, which would turn -0 into +0), rounded once; all ranks get the same bits, and
// all_reduce_reference (swiftspec_core/kernels/allreduce.py) computes the very same operations.
#include "ll_line.cuh"

// 8 bytes of the message as two 32-bit words; the last line may be partial (nbytes % 8 != 0,
// always a multiple of 2): it is read and written in 2-byte pieces, padded with zeros.
__device__ __forceinline__ uint2 read_line(const unsigned char* x, long long line, long long nbytes) {
  const long long at = line * 8;
  if (at + 8 <= nbytes) return *reinterpret_cast<const uint2*>(x + at);
  unsigned short h[4] = {0, 0, 0, 0};
  const unsigned short* x16 = reinterpret_cast<const unsigned short*>(x + at);
  for (int j = 0; j < 4 && at + 2 * j < nbytes; ++j) h[j] = x16[j];
  return make_uint2(h[0] | (unsigned int)h[1] << 16, h[2] | (unsigned int)h[3] << 16);
}

__device__ __forceinline__ void write_line(unsigned char* x, long long line, long long nbytes, uint2 v) {
  const long long at = line * 8;
  if (at + 8 <= nbytes) {
    *reinterpret_cast<uint2*>(x + at) = v;
    return;
  }
  const unsigned short h[4] = {(unsigned short)(v.x & 0xffffu), (unsigned short)(v.x >> 16),
                               (unsigned short)(v.y & 0xffffu), (unsigned short)(v.y >> 16)};
  unsigned short* x16 = reinterpret_cast<unsigned short*>(x + at);
  for (int j = 0; j < 4 && at + 2 * j < nbytes; ++j) x16[j] = h[j];
}

// x: this rank's message (8-byte aligned), summed in place. peers[r]: rank r's inbox (peers[rank]
// is this rank's own). capacity: lines per (half, sender) in every inbox. Grid: ceil(lines / chunk)
// blocks; any block size.
template <typename T>
__device__ __forceinline__ void ll_allreduce(unsigned char* x, long long nbytes, const unsigned long long* peers,
                                             unsigned int* epochs, int rank, int world, long long capacity,
                                             int chunk, unsigned long long timeout_ns) {
  pdl_start();
  // Every thread reads the block's epoch itself (one broadcast load, in flight together with its
  // first message load) rather than thread 0 reading it and a barrier passing it on: one dependent
  // global round trip fewer before the first store to a peer.
  const unsigned int next = epochs[blockIdx.x] + 1u;
  const unsigned int epoch = next == 0u ? 2u : next;  // 0 marks a never-written line; 2 keeps the parity turning
  const long long half = epoch & 1u;
  const long long lines = (nbytes + 7) / 8;
  const long long first = (long long)blockIdx.x * chunk;
  const long long end = min(first + chunk, lines);

  // Send: this rank's lines into slot [half][rank] of every peer's inbox.
  for (long long i = first + threadIdx.x; i < end; i += blockDim.x) {
    const uint2 w = read_line(x, i, nbytes);
    for (int r = 0; r < world; ++r) {
      if (r == rank) continue;
      Line* inbox = reinterpret_cast<Line*>(peers[r]);
      store_line(inbox + (half * world + rank) * capacity + i, w.x, w.y, epoch);
    }
  }

  // Receive and sum in rank order; each thread reads back only the lines it sent itself, so the
  // in-place write below never races with another thread's read of x.
  const Line* mine = reinterpret_cast<const Line*>(peers[rank]);
  for (long long i = first + threadIdx.x; i < end; i += blockDim.x) {
    LineSum<T> sum;
    for (int r = 0; r < world; ++r) {
      uint2 w;
      if (r == rank) {
        w = read_line(x, i, nbytes);
      } else {
        const Line v = wait_line(mine + (half * world + r) * capacity + i, epoch, timeout_ns);
        w = make_uint2(v.d0, v.d1);
      }
      if (r == 0) sum.set(w); else sum.add(w);
    }
    write_line(x, i, nbytes, sum.get());
  }
  __syncthreads();  // every thread has read the old epoch before it is replaced
  if (threadIdx.x == 0) epochs[blockIdx.x] = epoch;  // read by this block's next call only
}

extern "C" __global__ void ll_allreduce_bf16(unsigned char* x, long long nbytes, const unsigned long long* peers,
                                             unsigned int* epochs, int rank, int world, long long capacity,
                                             int chunk, unsigned long long timeout_ns) {
  ll_allreduce<bf16>(x, nbytes, peers, epochs, rank, world, capacity, chunk, timeout_ns);
}

extern "C" __global__ void ll_allreduce_f32(unsigned char* x, long long nbytes, const unsigned long long* peers,
                                            unsigned int* epochs, int rank, int world, long long capacity,
                                            int chunk, unsigned long long timeout_ns) {
  ll_allreduce<float>(x, nbytes, peers, epochs, rank, world, capacity, chunk, timeout_ns);
}
