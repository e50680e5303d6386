// RoPE in fp32 as the torch references compute it (rope.py's rotate_half layout), shared by the
// cache append (append_kv.cu, k) and the tree attention (attention.cu, q).
#pragma once

// fp32 RoPE of one pair (i, i + half) in rotate_half's layout, each product and sum rounded as
// torch does (no fused multiply-add), so the cache append matches its reference bitwise.
__device__ __forceinline__ void rope_pair(float x1, float x2, float c1, float s1, float c2, float s2,
                                          float &y1, float &y2) {
  y1 = __fadd_rn(__fmul_rn(x1, c1), -__fmul_rn(x2, s1));
  y2 = __fadd_rn(__fmul_rn(x2, c2), __fmul_rn(x1, s2));
}
