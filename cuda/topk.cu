// The k largest logits of each row, their indices and the row's logsumexp, in one kernel
// (swiftspec_core/kernels/topk.py launches it; topk_reference there is the torch reference).
//
// Why: torch.topk over a 128k vocabulary runs a radix select of ~15 kernels (about 60 us on an
// H200 for 9-15 rows) and the logsumexp five more; a draft step and a verification each paid that
// after their forward. Here one block reads its row twice from L2 (the lm_head just wrote it).
//
// Order: values descending; equal values by index ascending (torch.argmax's first maximum), so
// the result is a function of the row alone. The logsumexp is max + log(sum exp(x - max)) with
// each thread's strided partial sum and the block's sums added in a fixed order.
#include "common.cuh"

#define THREADS 512
#define WARPS (THREADS / 32)  // at most 32: warp 0 merges one list a lane
#define NEG_INF __int_as_float(0xff800000)

// (a, ia) ranks before (b, ib): larger value, or the same value at a lower index.
__device__ __forceinline__ bool before(float a, int ia, float b, int ib) {
  return a > b || (a == b && ia < ib);
}

// Insert (x, i) into a descending list of K (values v, indices id) if it ranks before the last.
template <int K>
__device__ __forceinline__ void insert(float (&v)[K], int (&id)[K], float x, int i) {
  if (!before(x, i, v[K - 1], id[K - 1])) return;
  v[K - 1] = x;
  id[K - 1] = i;
#pragma unroll
  for (int j = K - 1; j > 0; --j) {  // the new entry moves up; the rest stay in order
    if (before(v[j], id[j], v[j - 1], id[j - 1])) {
      const float tv = v[j]; v[j] = v[j - 1]; v[j - 1] = tv;
      const int ti = id[j]; id[j] = id[j - 1]; id[j - 1] = ti;
    }
  }
}

// The warp's K best of its lanes' sorted lists, in K rounds: the best head wins (a butterfly over
// (value, index): every lane agrees), its lane drops it. Lane 0 ends with the list in out_v/out_i.
template <int K>
__device__ __forceinline__ void warp_merge(float (&v)[K], int (&id)[K], float (&out_v)[K], int (&out_i)[K]) {
#pragma unroll
  for (int r = 0; r < K; ++r) {
    float bv = v[0];
    int bi = id[0];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (before(ov, oi, bv, bi)) { bv = ov; bi = oi; }
    }
    out_v[r] = bv;
    out_i[r] = bi;
    if (id[0] == bi && v[0] == bv) {  // this lane's head won (indices are unique, -1 only for -inf fill)
#pragma unroll
      for (int j = 0; j < K - 1; ++j) { v[j] = v[j + 1]; id[j] = id[j + 1]; }
      v[K - 1] = NEG_INF;
      id[K - 1] = 0x7fffffff;
    }
  }
}

// grid (T), block THREADS. logits: row t at logits + t * ld, V values. values/indices [T, K], lse [T].
template <int K>
__device__ void topk_body(const float* __restrict__ logits, long long ld, int V, float* __restrict__ values,
                          long long* __restrict__ indices, float* __restrict__ lse) {
  __shared__ float cand_v[WARPS][K];
  __shared__ int cand_i[WARPS][K];
  __shared__ float warp_sums[WARPS];
  __shared__ float row_max;
  pdl_start();
  const float* row = logits + (long long)blockIdx.x * ld;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float v[K];
  int id[K];
#pragma unroll
  for (int j = 0; j < K; ++j) { v[j] = NEG_INF; id[j] = 0x7fffffff; }
#pragma unroll 4
  for (int i = threadIdx.x; i < V; i += THREADS) insert<K>(v, id, row[i], i);

  float wv[K];
  int wi[K];
  warp_merge<K>(v, id, wv, wi);
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < K; ++j) { cand_v[warp][j] = wv[j]; cand_i[warp][j] = wi[j]; }
  }
  __syncthreads();
  if (warp == 0) {  // lane l < WARPS holds warp l's sorted list (the rest nothing); merge them the same way
#pragma unroll
    for (int j = 0; j < K; ++j) {
      v[j] = lane < WARPS ? cand_v[lane][j] : NEG_INF;
      id[j] = lane < WARPS ? cand_i[lane][j] : 0x7fffffff;
    }
    warp_merge<K>(v, id, wv, wi);
    if (lane == 0) {
      row_max = wv[0];
#pragma unroll
      for (int j = 0; j < K; ++j) {
        values[(long long)blockIdx.x * K + j] = wv[j];
        indices[(long long)blockIdx.x * K + j] = wi[j];
      }
    }
  }
  __syncthreads();

  const float m = row_max;
  float s = 0.f;
#pragma unroll 4
  for (int i = threadIdx.x; i < V; i += THREADS) s += expf(row[i] - m);
  s = warp_sum(s);
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = warp_sum(lane < WARPS ? warp_sums[lane] : 0.f);
    if (lane == 0) lse[blockIdx.x] = m + logf(s);
  }
}

#define TOPK_KERNEL(K)                                                                                 \
  extern "C" __global__ void __launch_bounds__(THREADS) topk_k##K(                                    \
      const float* logits, long long ld, int V, float* values, long long* indices, float* lse) {      \
    topk_body<K>(logits, ld, V, values, indices, lse);                                                \
  }
TOPK_KERNEL(2)
TOPK_KERNEL(4)
TOPK_KERNEL(8)
TOPK_KERNEL(16)
