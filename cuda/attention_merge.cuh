// The tree attention's split-KV merge (attention.cu): chosen blocks of a (kv head, query group)
// combine every chunk's partials into the output, in chunk order, so a query's bits depend on its
// chunks' partials alone (not on which block merges, or when).
#pragma once
#include "common.cuh"
#include "mma.cuh"

#define NEG_INF __int_as_float(0xff800000)  // -inf without <cmath> (NVRTC has no host headers)

__device__ __forceinline__ void wait_count(const int *counter, int count) {
  int seen;
  do asm volatile("ld.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
  while (seen != count);
}

// Which part of its group's outputs block c merges: 1 + the part, or 0 (every thread). One thread
// a block synchronizes on the group's counter: the barrier orders the block's partial stores
// before thread 0's release, and thread 0's acquire before the barrier after it, which orders it
// before every thread's loads of the partials. The counter is back at 0 when the call ends.
// - by_position (one merger, the grid in one wave: the launcher's rule): the last chunk's block
//   merges, once every other block has counted in with a release reduction (they wait for
//   nothing and leave); it reads the count with acquire loads and resets it. Its own partials
//   need no fence (the barrier), so its critical path loses the ticket's fence and atomic round
//   trips (NOTES v135).
// - else by ticket: every block fences and draws one; the last `mergers` to draw merge, each a
//   part of the outputs (two where one block's merge is large: NOTES v114). The last ticket
//   acquires (fence after the atomic); an earlier merging one spins on acquire loads until every
//   block has counted (the grid is then one wave, so the blocks still counting run). The last
//   merger to read the counter resets it (the spinning one, or the last block alone). (Every
//   thread fencing with __threadfence(), a fence.sc, cost ~0.3 us more; NOTES v48.)
__device__ __forceinline__ int merge_role(int *counter, int c, int nchunks, int mergers, bool by_position) {
  __shared__ int role;
  __syncthreads();
  if (threadIdx.x == 0) {
    if (by_position && c < nchunks - 1) {
      asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" :: "l"(counter) : "memory");
      role = 0;
    } else if (by_position) {
      wait_count(counter, nchunks - 1);
      *counter = 0;
      role = 1;
    } else {
      asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
      const int done = atomicAdd(counter, 1), part = done - (nchunks - mergers);  // 0 .. mergers - 1: merges
      role = part >= 0 ? part + 1 : 0;
      if (done == nchunks - 1) {
        if (mergers == 1) *counter = 0;
        asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
      } else if (part >= 0) {
        wait_count(counter, nchunks);
        *counter = 0;
      }
    }
  }
  __syncthreads();
  return role;
}

// Query rows [t0 * G, t1 * G) of kv head kh into out [T, H * HD]: the partials part_ml [KV, nchunks,
// Q, 2] (a chunk's max score in log2 units, its sum of exp2(score - max)) and part_acc [KV, nchunks,
// Q, HD] (bf16, its unnormalized output) of chunks 0 .. q_pos[t - t0] / CH; a block's `threads`, part
// `part` of `parts` (block-sized slices of the outputs in turn: an output's bits do not depend on
// which part merges it).
template <int HD, int CH>
__device__ __forceinline__ void merge_chunks(const float *__restrict__ part_ml, const bf16 *__restrict__ part_acc,
                                             bf16 *__restrict__ out, const int *q_pos, int t0, int t1, int G,
                                             int kh, int nchunks, int Q, int H, int part, int parts, unsigned threads) {
  constexpr int D8 = HD / 8;
  // The output: a thread a (query row, 8 dims); chunks 0..last in batches of MB (a batch's loads
  // issued together: one round trip a batch, and at context <= MB * CH the whole merge; two
  // batches of 8 fp32 partials took two, ~1.8 us; NOTES v56): the running max m moves once a
  // batch (the sums so far rescaled by exp2(m_old - m_new)), then the batch's chunks add their
  // sums times exp2(their max - m), each independent of the others (a chunk at a time made the
  // batch one chain of exp2 and fma's; NOTES v51).
  constexpr int MB = 16;
  const int rows = (t1 - t0) * G;
  for (int item = threadIdx.x + part * threads; item < rows * D8; item += parts * threads) {
    const int r = item / D8, d = (item % D8) * 8, qr = t0 * G + r, t = qr / G, h = kh * G + qr % G;
    const int last = min(max(q_pos[t - t0], 0) / CH, nchunks - 1);
    const long long first = (long long)kh * nchunks * Q + qr;  // slot of chunk 0
    float m = NEG_INF, l = 0.f;
    float o[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int cb = 0; cb <= last; cb += MB) {  // chunk 0 holds position 0 <= p: m is finite from it on
      float2 ml[MB];
      uint4 a[MB];  // 8 bf16 of the chunk's output
#pragma unroll
      for (int k = 0; k < MB; ++k) {  // chunks past the last: not loaded, max -inf (weight 0), sums 0
        ml[k] = make_float2(NEG_INF, 0.f);
        a[k] = make_uint4(0u, 0u, 0u, 0u);
        if (cb + k <= last) {
          const long long slot = first + (long long)(cb + k) * Q;
          ml[k] = __ldcg(reinterpret_cast<const float2 *>(part_ml) + slot);
          a[k] = __ldcg(reinterpret_cast<const uint4 *>(part_acc + slot * HD + d));
        }
      }
      float m_new = m;
#pragma unroll
      for (int k = 0; k < MB; ++k) m_new = fmaxf(m_new, ml[k].x);
      const float keep = exp2f(m - m_new);  // 0 in the first batch (m = -inf), where l and o are 0
      l *= keep;
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] *= keep;
#pragma unroll
      for (int k = 0; k < MB; ++k) {
        const float w = exp2f(ml[k].x - m_new);
        l = fmaf(w, ml[k].y, l);
        const unsigned words[4] = {a[k].x, a[k].y, a[k].z, a[k].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&words[i]));
          o[2 * i] = fmaf(w, f.x, o[2 * i]);
          o[2 * i + 1] = fmaf(w, f.y, o[2 * i + 1]);
        }
      }
      m = m_new;
    }
    const float inv = 1.f / l;  // one division, 8 products (8 divisions took ~0.4 us)
    uint4 packed;
    packed.x = pack2(__float2bfloat16_rn(o[0] * inv), __float2bfloat16_rn(o[1] * inv));
    packed.y = pack2(__float2bfloat16_rn(o[2] * inv), __float2bfloat16_rn(o[3] * inv));
    packed.z = pack2(__float2bfloat16_rn(o[4] * inv), __float2bfloat16_rn(o[5] * inv));
    packed.w = pack2(__float2bfloat16_rn(o[6] * inv), __float2bfloat16_rn(o[7] * inv));
    *reinterpret_cast<uint4 *>(out + (long long)t * H * HD + (long long)h * HD + d) = packed;
  }
}
