// The cache append: k with RoPE and v of each token of a forward into its cache row. Python side
// and torch reference: swiftspec_core/kernels/attention.py (append_kv). The fused forward appends
// inside the tree attention instead (attention.cu, append = 1), with the same rope.cuh arithmetic.
#include "common.cuh"
#include "rope.cuh"

// grid (T), block 256: k with RoPE at positions[t] and v into row rows[t] of the caches; a thread
// 4 pairs of a head at a time.
extern "C" __global__ void append_kv(const bf16 *__restrict__ qkv, const long long *__restrict__ positions,
                                     const long long *__restrict__ rows, const float *__restrict__ cos_t,
                                     const float *__restrict__ sin_t, bf16 *__restrict__ k_cache,
                                     bf16 *__restrict__ v_cache, int H, int KV, int hd, int R) {
  pdl_start();
  const int t = blockIdx.x, half = hd / 2, groups = half / 4;
  const long long stride = (long long)(H + 2 * KV) * hd;
  const bf16 *k = qkv + t * stride + (long long)H * hd, *v = k + (long long)KV * hd;
  const long long row = rows[t];
  if (row < 0 || row >= R) return;  // never a fault; the Python side states the contract
  const float *cs = cos_t + positions[t] * hd, *sn = sin_t + positions[t] * hd;
  for (int e = threadIdx.x; e < KV * groups; e += blockDim.x) {
    const int head = e / groups, i0 = (e % groups) * 4, at = head * hd;
    store_kv4(new_kv4(k + at, v + at, cs, sn, i0, half), k_cache + row * KV * hd + at, v_cache + row * KV * hd + at,
              i0, half);
  }
}
