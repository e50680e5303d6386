// The k largest logits of each row, their indices and the row's logsumexp, in two kernels
// (swiftspec_core/kernels/topk.py launches them; topk_reference there is the torch reference).
//
// Why: torch.topk over a 128k vocabulary runs a radix select of ~15 kernels (about 60 us on an
// H200 for 9-15 rows) and the logsumexp five more; a draft step and a verification each paid that
// after their forward. One block a row (the first version) streamed a 0.5 MB row through one SM:
// ~75 us. Here topk_part splits each row into S slices, a block a slice, and writes each slice's
// K best, max and sum of exp(x - max); topk_merge (one warp a row) merges the S lists and sums the
// S partial sums.
//
// Order: values descending; equal values by index ascending (torch.argmax's first maximum), so
// the result is a function of the row alone. The logsumexp is max + log(sum exp(x - max)); each
// thread's strided partial sum, a slice's warps and the row's slices are added in fixed orders
// that depend on V alone (S is chosen from V).
#include "common.cuh"

#define THREADS 256
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

// grid (T, S), block THREADS. logits: row t at logits + t * ld, V values; slice s of a row holds
// positions [s * slice, min(V, (s + 1) * slice)). part_v/part_i [T, S, K], part_m/part_s [T, S]: the
// slice's K best, its maximum and sum of exp(x - maximum) (0 where the maximum is -inf).
template <int K>
__device__ void topk_part_body(const float* __restrict__ logits, long long ld, int V, int slice,
                               float* __restrict__ part_v, int* __restrict__ part_i, float* __restrict__ part_m,
                               float* __restrict__ part_s) {
  __shared__ float cand_v[WARPS][K];
  __shared__ int cand_i[WARPS][K];
  __shared__ float warp_sums[WARPS];
  __shared__ float slice_max;
  pdl_start();
  const float* row = logits + (long long)blockIdx.x * ld;
  const long long part = (long long)blockIdx.x * gridDim.y + blockIdx.y;
  const int begin = blockIdx.y * slice, end = min(V, begin + slice);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float v[K];
  int id[K];
#pragma unroll
  for (int j = 0; j < K; ++j) { v[j] = NEG_INF; id[j] = 0x7fffffff; }
#pragma unroll 4
  for (int i = begin + threadIdx.x; i < end; i += THREADS) insert<K>(v, id, row[i], i);

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
      slice_max = wv[0];
#pragma unroll
      for (int j = 0; j < K; ++j) { part_v[part * K + j] = wv[j]; part_i[part * K + j] = wi[j]; }
    }
  }
  __syncthreads();

  const float m = slice_max;
  float s = 0.f;
  if (m != NEG_INF) {  // an all -inf slice adds nothing (exp(-inf - -inf) would be NaN)
#pragma unroll 4
    for (int i = begin + threadIdx.x; i < end; i += THREADS) s += expf(row[i] - m);
  }
  s = warp_sum(s);
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = warp_sum(lane < WARPS ? warp_sums[lane] : 0.f);
    if (lane == 0) { part_m[part] = m; part_s[part] = s; }
  }
}

// grid (T), block 32 (one warp). Lane s < S holds slice s's list; values/indices [T, K], lse [T].
template <int K>
__device__ void topk_merge_body(const float* __restrict__ part_v, const int* __restrict__ part_i,
                                const float* __restrict__ part_m, const float* __restrict__ part_s, int S,
                                float* __restrict__ values, long long* __restrict__ indices, float* __restrict__ lse) {
  pdl_start();
  const int lane = threadIdx.x;
  const long long part = (long long)blockIdx.x * S + lane;
  float v[K], wv[K];
  int id[K], wi[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    v[j] = lane < S ? part_v[part * K + j] : NEG_INF;
    id[j] = lane < S ? part_i[part * K + j] : 0x7fffffff;
  }
  warp_merge<K>(v, id, wv, wi);
  const float m = wv[0];  // the row's maximum: the best of the slices' maxima
  const float pm = lane < S ? part_m[part] : NEG_INF;
  const float s = warp_sum(pm != NEG_INF ? part_s[part] * expf(pm - m) : 0.f);
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < K; ++j) {
      values[(long long)blockIdx.x * K + j] = wv[j];
      indices[(long long)blockIdx.x * K + j] = wi[j];
    }
    lse[blockIdx.x] = m + logf(s);
  }
}

#define TOPK_KERNELS(K)                                                                                \
  extern "C" __global__ void __launch_bounds__(THREADS) topk_part_k##K(                               \
      const float* logits, long long ld, int V, int slice, float* part_v, int* part_i, float* part_m,  \
      float* part_s) {                                                                                 \
    topk_part_body<K>(logits, ld, V, slice, part_v, part_i, part_m, part_s);                           \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(32) topk_merge_k##K(                                   \
      const float* part_v, const int* part_i, const float* part_m, const float* part_s, int S,        \
      float* values, long long* indices, float* lse) {                                                 \
    topk_merge_body<K>(part_v, part_i, part_m, part_s, S, values, indices, lse);                       \
  }
TOPK_KERNELS(2)
TOPK_KERNELS(4)
TOPK_KERNELS(8)
TOPK_KERNELS(16)
