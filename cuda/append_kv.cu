// The cache append: k with RoPE and v of each token of a forward into its cache row. Python side
// and torch reference: swiftspec_core/kernels/attention.py (append_kv).
#include "common.cuh"
#include "rope.cuh"

// grid (T), block 256: k with RoPE at positions[t] and v into row rows[t] of the caches.
extern "C" __global__ void append_kv(const bf16 *__restrict__ qkv, const long long *__restrict__ positions,
                                     const long long *__restrict__ rows, const float *__restrict__ cos_t,
                                     const float *__restrict__ sin_t, bf16 *__restrict__ k_cache,
                                     bf16 *__restrict__ v_cache, int H, int KV, int hd, int R) {
  pdl_start();
  const int t = blockIdx.x, half = hd / 2;
  const long long stride = (long long)(H + 2 * KV) * hd;
  const bf16 *k = qkv + t * stride + (long long)H * hd, *v = k + (long long)KV * hd;
  long long row = rows[t];
  if (row < 0 || row >= R) return;  // never a fault; the Python side states the contract
  const float *c = cos_t + positions[t] * hd, *s = sin_t + positions[t] * hd;
  bf16 *kd = k_cache + row * KV * hd, *vd = v_cache + row * KV * hd;
  for (int e = threadIdx.x; e < KV * half; e += blockDim.x) {
    const int head = e / half, i = e % half, a = head * hd + i, b = a + half;
    float y1, y2;
    rope_pair(__bfloat162float(k[a]), __bfloat162float(k[b]), c[i], s[i], c[i + half], s[i + half], y1, y2);
    kd[a] = __float2bfloat16_rn(y1);
    kd[b] = __float2bfloat16_rn(y2);
    vd[a] = v[a];
    vd[b] = v[b];
  }
}
