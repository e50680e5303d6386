// The tree attention's split-KV merge (attention.cu): the last block of a (kv head, query group)
// to finish combines every chunk's partials into the output, in chunk order, so a query's bits
// depend on its chunks' partials alone (not on which block merges, or when).
#pragma once
#include "common.cuh"
#include "mma.cuh"

#define NEG_INF __int_as_float(0xff800000)  // -inf without <cmath> (NVRTC has no host headers)

// Query rows [t0 * G, t1 * G) of kv head kh into out [T, H * HD]: the partials part_ml [KV, nchunks,
// Q, 2] (a chunk's max score in log2 units, its sum of exp2(score - max)) and part_acc [KV, nchunks,
// Q, HD] (bf16, its unnormalized output) of chunks 0 .. q_pos[t - t0] / CH; a block's threads, part
// `part` of `parts` (block-sized slices of the outputs in turn: an output's bits do not depend on
// which part merges it).
template <int HD, int CH>
__device__ __forceinline__ void merge_chunks(const float *__restrict__ part_ml, const bf16 *__restrict__ part_acc,
                                             bf16 *__restrict__ out, const int *q_pos, int t0, int t1, int G,
                                             int kh, int nchunks, int Q, int H, int part, int parts) {
  constexpr int D8 = HD / 8;
  // The output: a thread a (query row, 8 dims); chunks 0..last in batches of MB (a batch's loads
  // issued together: one round trip a batch, and at context <= MB * CH the whole merge; two
  // batches of 8 fp32 partials took two, ~1.8 us; NOTES v56): the running max m moves once a
  // batch (the sums so far rescaled by exp2(m_old - m_new)), then the batch's chunks add their
  // sums times exp2(their max - m), each independent of the others (a chunk at a time made the
  // batch one chain of exp2 and fma's; NOTES v51).
  constexpr int MB = 16;
  const int rows = (t1 - t0) * G;
  for (int item = threadIdx.x + part * blockDim.x; item < rows * D8; item += parts * blockDim.x) {
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
