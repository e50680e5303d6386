// A persistent chain of AWQ GEMMs (swiftspec_core/kernels/awq_chain.py; the probe of issue 11's
// persistent route, NOTES v204): one launch, one block an SM, runs `count` GEMMs one after another
// (phase p: out_p[M, N_p] = x_p @ W_p^T, M <= 8, group 128, AutoAWQ's tensors tiled as awq_gemm.cu
// reads them), a grid barrier between phases. What a run of separate awq_gemm launches pays at each
// GEMM's start and end (its first weight bytes, the last warps' tail, the launch), the chain pays
// once: every warp's ring of weight chunks runs on across units and phases (weights are never
// written, so the next phase's first chunks are in flight while the block waits at the barrier),
// and only x waits for the barrier. Measured (NOTES v204-v208), it does not pay: its kernel streams
// 1.2-1.5x slower per block than awq_gemm's at the same 16 warps, even as one launch a phase (ncu:
// ~1.3x awq_gemm's L2 traffic for the same DRAM bytes, warps waiting at a unit's end), and each
// barrier adds the slowest block's lag and a 0.77 us release. A probe, kept for its tests and for
// what those measurements leave open; no forward uses it.
//
// Work and numerics are awq_gemm.cu's at the launch shape (S, C) = (CHAIN_WARPS, phase's parts):
// a phase's unit u (of tiles x C) is tile u / C's part u % C (a cluster block's rank there); blocks
// take units b, b + G, ..; warp w of part r is split s = r S + w and sums groups s, s + C S, .. in
// that order, each group's chunks and mma's, fold and the warps' sums added in warp order as
// awq_gemm_block's r8 path does. Where C > 1 a part's block sums go to global partials and the
// tile's last block (a ticket) adds them in part order, as a cluster adds its blocks' sums: every
// output is bitwise awq_gemm's at (S, C) (the GPU test holds it), so a row's bits do not depend on
// M or on the other rows. As there, the accumulators live in shared memory and x is loaded a chunk
// ahead (through L2 here: the phase before wrote it), which leaves 20-24 warps room in the
// registers (a first version with both in registers, 127 a lane, ran 16 warps and 1.2-1.4x
// slower than awq_gemm at the same S: NOTES v204).
#include <cuda_fp16.h>
#include "common.cuh"
#include "mma.cuh"
#include "awq_common.cuh"
#include "awq_lanes.cuh"

#ifndef CHAIN_WARPS
#define CHAIN_WARPS 16  // S: warps a block, splitting a tile's groups
#endif
#ifndef CHAIN_STAGES
#define CHAIN_STAGES 8  // 1 KB chunks in a warp's ring: CHAIN_STAGES - 1 in flight (a power of two)
#endif
#define CHAIN_CHUNKS 4  // 32-k chunks a group of 128
#define CHAIN_META_BYTES 160  // a group's 64 fp16 scales and 8 int32 zeros
#define CHAIN_RING_BYTES (CHAIN_STAGES * (1024 + CHAIN_META_BYTES))
#define CHAIN_MAX_PHASES 64
#define CHAIN_ELEMENTS 512  // a tile's accumulators at M <= 8: (4 j + r) 32 + lane

// One GEMM of the chain (awq_chain.py packs them as 9 int64 words). partials [tiles][parts][512]
// fp32 and tickets [tiles] (zero, and left zero) are used where parts > 1.
struct ChainPhase {
  const bf16* x;
  const int* qweight;
  const int* qzeros;
  const __half* scales;
  bf16* out;
  float* partials;
  unsigned* tickets;
  int n, k, parts, unused;
};

// x through L2 only: x is written by this launch's earlier phases, which L1 does not see. CHAIN_X_L1
// (the probe's, where no phase writes another's x): through L1 as awq_gemm.cu reads it.
#ifndef CHAIN_X_L1
#define CHAIN_X_L1 0
#endif
__device__ __forceinline__ uint4 load16_l2(const void* p) {
  uint4 v;
  if (CHAIN_X_L1)
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  else
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// Where a warp's copies of one unit stand: this lane's piece of the current group's first chunk and
// its 16 bytes of the group's meta (lanes 0..9), the groups left (0: no unit) and the strides to
// the next group.
struct CopyUnit {
  const unsigned char* src;
  const unsigned char* meta;
  int left;
  unsigned group_stride, meta_stride;
};

// A warp's copies of its chunks in the order it sums them, over units and phases. They run
// CHAIN_STAGES - 1 chunks ahead of the sums, 3 mod 4 with 4 chunks a group, so the chunk each copy
// takes is known where the sums' chunk loop is unrolled (copy_at): the straight line holds no
// unit search; `next` is found ahead (prepare(), once a group, outside the chunk loop) and taken
// when `now` runs out.
struct Copier {
  int count, p, u;   // `next` is unit u of phase p (p == count: none)
  bool pending;      // `next` was taken: prepare() finds the one after
  unsigned ordinal;  // groups begun: the meta slot is ordinal % CHAIN_STAGES
  CopyUnit now, next;

  // Unit u of phase p, or the first unit of a later phase with one for this block (p, u moved to it).
  __device__ CopyUnit find(const ChainPhase* phases) {
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (; p < count; ++p, u = blockIdx.x) {
      const ChainPhase& ph = phases[p];
      if (u < (ph.n + 63) / 64 * ph.parts) break;
    }
    CopyUnit c{nullptr, nullptr, 0, 0u, 0u};
    if (p == count) return c;
    const ChainPhase& ph = phases[p];
    const int tile = u / ph.parts, split = (u % ph.parts) * CHAIN_WARPS + w, all = ph.parts * CHAIN_WARPS;
    const int groups = ph.k / 128;
    const unsigned meta_group = lane < 8 ? 128 : 32;
    c.left = (groups - 1 - split) / all + 1;  // parts x S <= groups (awq_chain.py checks)
    c.group_stride = all * 4096u;
    c.meta_stride = all * meta_group;
    c.src = reinterpret_cast<const unsigned char*>(ph.qweight) + (size_t)tile * ph.k * 32 + (size_t)split * 4096 + 16 * lane;
    c.meta = (lane < 8 ? reinterpret_cast<const unsigned char*>(ph.scales) + 16 * lane
                       : reinterpret_cast<const unsigned char*>(ph.qzeros) + 16 * (lane - 8)) +
             ((size_t)tile * groups + split) * meta_group;
    return c;
  }

  __device__ __forceinline__ void start(const ChainPhase* phases) {
    now = find(phases);
    u += gridDim.x;
    next = find(phases);
  }

  __device__ __forceinline__ void prepare(const ChainPhase* phases) {
    if (!pending) return;
    pending = false;
    u += gridDim.x;
    next = find(phases);
  }

  // Chunk P of the current group into `stage` (with P = 0 the group's meta into its slot); past
  // the group's last chunk, on to the next group, or the next unit.
  template <int P>
  __device__ __forceinline__ void copy(unsigned stage, unsigned meta_s, unsigned copy_dst, int lane) {
    if (now.left == 0) return;
    copy16(stage + copy_dst, now.src + 1024 * P);
    copy16(stage + copy_dst16(copy_dst), now.src + 1024 * P + 512);
    if (P == 0 && lane < 10) copy16(meta_s + (ordinal & (CHAIN_STAGES - 1)) * CHAIN_META_BYTES + 16 * lane, now.meta);
    if (P < CHAIN_CHUNKS - 1) return;
    ++ordinal;
    if (--now.left > 0) {
      now.src += now.group_stride, now.meta += now.meta_stride;
    } else {
      now = next;
      pending = true;
    }
  }
  // copy<chunk % 4>, for a chunk index the unrolled loops know (the switch folds away).
  __device__ __forceinline__ void copy_at(int chunk, unsigned stage, unsigned meta_s, unsigned copy_dst, int lane) {
    switch (chunk & (CHAIN_CHUNKS - 1)) {
      case 0: copy<0>(stage, meta_s, copy_dst, lane); break;
      case 1: copy<1>(stage, meta_s, copy_dst, lane); break;
      case 2: copy<2>(stage, meta_s, copy_dst, lane); break;
      default: copy<3>(stage, meta_s, copy_dst, lane);
    }
  }
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

// The end of phase e (the block's work in it done): thread 0 counts its block in and, with
// `barriers`, waits for all G (the (e + 1)-th barrier); the block waits on it. With stamps [phases]
// [G][2], thread 0 writes the %globaltimer ns of its arrival and its departure.
__device__ __forceinline__ void end_phase(unsigned* arrived, unsigned e, bool barriers, unsigned long long* stamps) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long* at = stamps == nullptr ? nullptr : stamps + 2 * ((size_t)e * gridDim.x + blockIdx.x);
    if (at != nullptr) at[0] = global_ns();
    if (barriers) {
      asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
      atomicAdd(arrived, 1u);
      // Polled with a pause between reads, so that up to 131 waiting threads do not read one L2
      // line back to back while other blocks still stream (NOTES v207: no difference measured).
      unsigned seen;
      while (true) {
        asm volatile("ld.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(arrived) : "memory");
        if (seen >= (e + 1) * gridDim.x) break;
        __nanosleep(128);
      }
    }
    if (at != nullptr) at[1] = global_ns();
  }
  __syncthreads();
}

extern "C" __global__ void __launch_bounds__(CHAIN_WARPS * 32, 1)
awq_chain(const ChainPhase* __restrict__ chain, int count, int M, unsigned* barrier, int barriers,
          unsigned long long* stamps) {
  // barriers = 0 only where no phase reads what an earlier one writes (the probe's measure of what
  // the barriers cost); stamps: null, or each phase's arrivals and departures (end_phase).
  // [warps] rings ([STAGES][1 KB] stages, then [STAGES][160 B] meta slots), then each warp's
  // accumulators ([32 lanes][4] float4), which a unit's combine adds.
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ ChainPhase phases[CHAIN_MAX_PHASES];
  __shared__ int last_part;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, G = gridDim.x;
  for (int p = threadIdx.x; p < count; p += blockDim.x) phases[p] = chain[p];
  __syncthreads();
  const unsigned ring_s = shared_address(smem + warp * CHAIN_RING_BYTES);
  const unsigned meta_s = ring_s + CHAIN_STAGES * 1024;
  auto stage_of = [&](unsigned n) { return ring_s + (n & (CHAIN_STAGES - 1)) * 1024; };
  float* sums_s = reinterpret_cast<float*>(smem + CHAIN_WARPS * CHAIN_RING_BYTES);  // [warps][32 lanes][4] float4
  const LaneConstants c = lane_constants(lane, M, 0);  // x_row per phase below (it holds K)
  const int g = lane >> 2, t = lane & 3;

  static_assert(CHAIN_STAGES >= 4 && (CHAIN_STAGES & (CHAIN_STAGES - 1)) == 0, "a power of two, >= 4");
  Copier copier{count, 0, (int)blockIdx.x, false, 0u, {}, {}};
  copier.start(phases);
#pragma unroll
  for (int q = 0; q < CHAIN_STAGES - 1; ++q) {  // chunks 0 .. STAGES - 2
    copier.copy_at(q, stage_of(q), meta_s, c.copy_dst, lane);
    copies_commit();
    copier.prepare(phases);
  }

  // Groups summed: group i's chunk q is the warp's chunk 4 i + q (stage (4 i + q) % STAGES, its
  // copy out STAGES - 1 chunks before), its meta in slot i % STAGES.
  unsigned ordinal = 0;
  for (int p = 0; p < count; ++p) {
    const ChainPhase& ph = phases[p];
    const int parts = ph.parts, tiles = (ph.n + 63) / 64, units = tiles * parts, all = parts * CHAIN_WARPS;
    const int groups = ph.k / 128;
    // x row g at k 8t of a group's chunk q: x_bytes + 256 group + 64 q (row 0 where g >= M).
    const unsigned char* x_bytes = reinterpret_cast<const unsigned char*>(ph.x) + 2u * ((g < M ? g : 0) * (unsigned)ph.k + 8 * t);
    uint4 xs[2];  // x row g of the warp's chunks n (xs[n % 2]) and n + 1
    bool x_ready = false;  // xs[0] holds the next group's first chunk (not at a phase's first)
    for (int u = blockIdx.x; u < units; u += G) {
      const int tile = u / parts, part = u % parts, split = part * CHAIN_WARPS + warp;
      const int mine = (groups - 1 - split) / all + 1;
      const int next_first = u + G < units ? ((u + G) % parts) * CHAIN_WARPS + warp : -1;  // the next unit's first group
      // The warp's accumulators, in its slot of the sums (awq_gemm.cu's r8 layout: tile j's float4
      // at j ^ (lane / 2 % 4), so a quarter warp's 16-byte accesses hit 8 different bank groups).
      float4* acc = reinterpret_cast<float4*>(sums_s) + (warp * 32 + lane) * 4;
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int i = 0; i < mine; ++i) {
        const int group = split + i * all;
        const int next = i + 1 < mine ? group + all : next_first;  // the group after, in this phase (-1: none)
        if (!x_ready) xs[0] = load16_l2(x_bytes + 256 * group);
        float sums[4][4], x_sums[4];
#pragma unroll
        for (int q = 0; q < CHAIN_CHUNKS; ++q) {
          const unsigned chunk = 4 * ordinal + q;
          const uint4 x_now = xs[q & 1];
          if (q + 1 < CHAIN_CHUNKS) xs[(q + 1) & 1] = load16_l2(x_bytes + 256 * group + 64 * (q + 1));  // a chunk ahead
          else if (next >= 0) xs[0] = load16_l2(x_bytes + 256 * next);
          copies_wait<CHAIN_STAGES - 2>();
          __syncwarp();  // every lane's copies of this chunk visible; every lane done with the last one's stage
          copier.copy_at(q + CHAIN_STAGES - 1, stage_of(chunk + CHAIN_STAGES - 1), meta_s, c.copy_dst, lane);
          copies_commit();
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            unsigned w[4];
            ldmatrix_trans(w, stage_of(chunk) + c.read + 512 * h);
            const unsigned b0 = h ? x_now.z : x_now.x, b1 = h ? x_now.w : x_now.y;
            const bool first = q == 0 && h == 0;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const unsigned a0 = nibbles_plus_128(w[0], j), a1 = nibbles_plus_128(w[1], j);
              const unsigned a2 = nibbles_plus_128(w[2], j), a3 = nibbles_plus_128(w[3], j);
              if (first) mma_16816_zero(sums[j], a0, a1, a2, a3, b0, b1);
              else mma_16816(sums[j], a0, a1, a2, a3, b0, b1);
            }
            if (first) mma_16816_zero(x_sums, kOnes, kOnes, kOnes, kOnes, b0, b1);
            else mma_16816(x_sums, kOnes, kOnes, kOnes, kOnes, b0, b1);
          }
        }
        // The fold, as awq_gemm_block's at M <= 8: (sums - (128 + zero) x_sums) scale, added.
        const unsigned slot = meta_s + (ordinal++ & (CHAIN_STAGES - 1)) * CHAIN_META_BYTES;
        const unsigned scales = slot + 16 * (lane >> 3);
        const uint4 sw = load_shared16_at(scales), sw8 = load_shared16_at(scales + 64);
        const unsigned scale_words[4] = {sw.x, sw.y, sw.z, sw.w}, scale_words8[4] = {sw8.x, sw8.y, sw8.z, sw8.w};
        const unsigned zeros_lo = load_shared4(slot + 128 + 4 * (lane >> 3));
        const unsigned zeros_hi = load_shared4(slot + 144 + 4 * (lane >> 3));
        const unsigned half_shift = 16u * ((lane >> 2) & 1);
        const unsigned both = permute(zeros_lo, zeros_hi, (lane >> 2) & 1 ? 0x7632u : 0x5410u);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float s_g = scale_of(scale_words[j], half_shift), s_g8 = scale_of(scale_words8[j], half_shift);
          const unsigned zero_pair = nibbles_plus_128(both, j);
          const float z_g = __uint_as_float(zero_pair << 16), z_g8 = __uint_as_float(zero_pair & 0xFFFF0000u);
          float4& a = acc[j ^ ((lane >> 1) & 3)];
          float4 v = a;
          v.x = fmaf(s_g, fmaf(-z_g, x_sums[0], sums[j][0]), v.x);
          v.y = fmaf(s_g, fmaf(-z_g, x_sums[1], sums[j][1]), v.y);
          v.z = fmaf(s_g8, fmaf(-z_g8, x_sums[0], sums[j][2]), v.z);
          v.w = fmaf(s_g8, fmaf(-z_g8, x_sums[1], sums[j][3]), v.w);
          a = v;
        }
        x_ready = next >= 0;
        copier.prepare(phases);  // the copies' next unit, if they took the last one
      }
      // The unit's combine: the warps' sums in warp order, a thread an element e = (4 j + r) 32 + l
      // (tile j, d fragment register r, lane l).
      __syncthreads();
      const Epilogue plain{nullptr, nullptr, nullptr, nullptr, nullptr};
      float* partials = ph.partials + (size_t)tile * ph.parts * CHAIN_ELEMENTS;  // [parts][512] of this tile
      for (int e = threadIdx.x; e < CHAIN_ELEMENTS; e += blockDim.x) {
        const int l = e & 31, at_warp0 = (l * 4 + ((e >> 7) ^ ((l >> 1) & 3))) * 4 + ((e >> 5) & 3);
        float v[1] = {sums_s[at_warp0]};
        for (int s = 1; s < CHAIN_WARPS; ++s) v[0] += sums_s[s * CHAIN_ELEMENTS + at_warp0];
        // awq_gemm.cu's element index: (8 j + 4 b + r) 32 + lane, b = 0.
        const int at = ((e >> 7) * 8 + ((e >> 5) & 3)) * 32 + (e & 31);
        if (ph.parts == 1) store_output<false>(v, at, tile, nullptr, ph.out, M, ph.n, plain);
        else partials[part * CHAIN_ELEMENTS + e] = v[0];
      }
      if (ph.parts > 1) {  // the tile's last part to finish adds them all, in part order
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) last_part = atomicAdd(ph.tickets + tile, 1u) == (unsigned)ph.parts - 1;
        __syncthreads();
        if (last_part) {
          __threadfence();
          for (int e = threadIdx.x; e < CHAIN_ELEMENTS; e += blockDim.x) {
            float v[1] = {__ldcg(partials + e)};
            for (int q = 1; q < ph.parts; ++q) v[0] += __ldcg(partials + q * CHAIN_ELEMENTS + e);
            store_output<false>(v, ((e >> 7) * 8 + ((e >> 5) & 3)) * 32 + (e & 31), tile, nullptr, ph.out, M, ph.n, plain);
          }
          if (threadIdx.x == 0) ph.tickets[tile] = 0u;  // for the next launch
        }
      }
      __syncthreads();  // sums_s free for the next unit
    }
    end_phase(barrier, p, barriers != 0, stamps);
  }
  copies_wait<0>();
  // The last block through resets the barrier for the next launch.
  if (barriers && threadIdx.x == 0 && atomicAdd(barrier + 1, 1u) == G - 1) {
    barrier[0] = 0u;
    barrier[1] = 0u;
    __threadfence();
  }
}
