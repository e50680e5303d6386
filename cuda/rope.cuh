// RoPE in fp32 as the torch references compute it (rope.py's rotate_half layout), shared by the
// cache append (append_kv.cu, and the tree attention's own append) and the tree attention's q.
#pragma once
#include "common.cuh"

// fp32 RoPE of one pair (i, i + half) in rotate_half's layout, each product and sum rounded as
// torch does (no fused multiply-add), so the cache append matches its reference bitwise.
__device__ __forceinline__ void rope_pair(float x1, float x2, float c1, float s1, float c2, float s2,
                                          float &y1, float &y2) {
  y1 = __fadd_rn(__fmul_rn(x1, c1), -__fmul_rn(x2, s1));
  y2 = __fadd_rn(__fmul_rn(x2, c2), __fmul_rn(x1, s2));
}

// The tables of pairs i0 .. i0 + 3 at one position (cs, sn: its rows of the [P, hd] fp32 tables):
// four 16-byte loads.
struct Rope4 {
  float4 c1, s1, c2, s2;  // cos and sin at i0.., then at i0 + half..
};

__device__ __forceinline__ Rope4 rope4_tables(const float *cs, const float *sn, int i0, int half) {
  return {*reinterpret_cast<const float4 *>(cs + i0), *reinterpret_cast<const float4 *>(sn + i0),
          *reinterpret_cast<const float4 *>(cs + i0 + half), *reinterpret_cast<const float4 *>(sn + i0 + half)};
}

// Pairs i0 + j, j < 4: x1 holds x[i0..i0 + 3], x2 x[i0 + half..] (4 bf16 each); -> y1, y2 the same
// with RoPE, each element rope_pair's, rounded once to bf16.
__device__ __forceinline__ void rope4(const Rope4 &r, uint2 x1, uint2 x2, uint2 &y1, uint2 &y2) {
  const float c1[4] = {r.c1.x, r.c1.y, r.c1.z, r.c1.w}, s1[4] = {r.s1.x, r.s1.y, r.s1.z, r.s1.w};
  const float c2[4] = {r.c2.x, r.c2.y, r.c2.z, r.c2.w}, s2[4] = {r.s2.x, r.s2.y, r.s2.z, r.s2.w};
  const bf16 *a = reinterpret_cast<const bf16 *>(&x1), *b = reinterpret_cast<const bf16 *>(&x2);
  bf16 o1[4], o2[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float u, w;
    rope_pair(__bfloat162float(a[j]), __bfloat162float(b[j]), c1[j], s1[j], c2[j], s2[j], u, w);
    o1[j] = __float2bfloat16_rn(u);
    o2[j] = __float2bfloat16_rn(w);
  }
  y1 = *reinterpret_cast<const uint2 *>(o1);
  y2 = *reinterpret_cast<const uint2 *>(o2);
}

// What the cache append writes of one head, pairs i0 .. i0 + 3: its key (k: the head's k in qkv)
// with RoPE at the token's position (tables cs, sn), its value (v) as it is; each half a uint2
// (k_lo: k[i0..i0 + 3], k_hi: k[i0 + half..]).
struct NewKV4 {
  uint2 k_lo, k_hi, v_lo, v_hi;
};

__device__ __forceinline__ NewKV4 new_kv4(const bf16 *k, const bf16 *v, const float *cs, const float *sn, int i0,
                                          int half) {
  const uint2 x1 = *reinterpret_cast<const uint2 *>(k + i0), x2 = *reinterpret_cast<const uint2 *>(k + i0 + half);
  NewKV4 o{x1, x2, *reinterpret_cast<const uint2 *>(v + i0), *reinterpret_cast<const uint2 *>(v + i0 + half)};
  rope4(rope4_tables(cs, sn, i0, half), x1, x2, o.k_lo, o.k_hi);
  return o;
}

// Stores o at row (k and v: the head's row in each cache, or in a shared tile).
__device__ __forceinline__ void store_kv4(const NewKV4 &o, bf16 *k, bf16 *v, int i0, int half) {
  *reinterpret_cast<uint2 *>(k + i0) = o.k_lo;
  *reinterpret_cast<uint2 *>(k + i0 + half) = o.k_hi;
  *reinterpret_cast<uint2 *>(v + i0) = o.v_lo;
  *reinterpret_cast<uint2 *>(v + i0 + half) = o.v_hi;
}
