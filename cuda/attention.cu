// Tree attention with RoPE inside and an in-kernel split-KV combine; and the cache append.
// Python side and torch references: swiftspec_core/kernels/attention.py.
//
// Row invariance: a query's bits depend only on its q, its position p and the keys/values at
// positions 0..p. Keys are reduced in position order: positions split into chunks of CHUNK at
// fixed boundaries (one block per chunk, kv head and query group), a chunk's scores computed one
// lane a position (two sub-tiles of 32 positions), one softmax over the chunk (max and sum in a
// fixed lane order), its values summed in position order, and the chunks' partials combined in
// chunk order by the last block of the (kv head, group) to finish. Nothing depends on T, the
// query's index, the query grouping, the cache rows its tree keys sit at, or the span (the grid).
// Speed: the kernel is bound by shared-memory reads (every query row reads the whole chunk), so
// the chunk stays bf16 in shared memory and a warp computes HB q heads of one query together:
// one read of a key or value serves HB heads. The chunk is staged before the block's positions
// are read (one global round trip fewer), and the grid is one wave where it fits (kernels/attention.py).
#include "common.cuh"

#define CHUNK 64     // positions a block reduces; kernels/attention.py's CHUNK says the same
#define NWARPS 8     // warps a block (256 threads)
#define TQMAX 32     // queries a block at most (their positions and prefixes sit in shared memory)
#define MIN_BLOCKS 2 // blocks an SM (__launch_bounds__); kernels/attention.py sizes the grid by it
#define NEG_INF __int_as_float(0xff800000)  // -inf without <cmath> (NVRTC has no host headers)
#define KPAD 8       // bf16 padding a K tile row: 8 lanes reading 16 bytes of 8 rows hit distinct banks
#define HB 4         // q heads of one kv head a warp computes together

// Staged block columns (graphs.py): token, position, cache row, prefix length, visible rows.
#define COL_POSITION 1
#define COL_ROW 2
#define COL_PREFIX 3
#define COL_VISIBLE 4

// fp32 RoPE of one pair (i, i + half) in rotate_half's layout, each product and sum rounded as
// torch does (no fused multiply-add), so the cache append matches its reference bitwise.
__device__ __forceinline__ void rope_pair(float x1, float x2, float c1, float s1, float c2, float s2,
                                          float &y1, float &y2) {
  y1 = __fadd_rn(__fmul_rn(x1, c1), -__fmul_rn(x2, s1));
  y2 = __fadd_rn(__fmul_rn(x2, c2), __fmul_rn(x1, s2));
}

// Cache row holding position j of a query with prefix n and visible rows vis[0..V).
__device__ __forceinline__ long long key_row(const long long *vis, int V, int n, int j, int R) {
  long long r = j < n ? (long long)j : vis[min(j - n, V - 1)];
  return r < 0 ? 0 : (r >= R ? R - 1 : r);  // out-of-range rows: wrong but never a fault
}

// Shared memory of tree_attention (dynamic; kernels/attention.py sizes it by the same formula):
// the chunk's K rows [CHUNK][HD + KPAD] and V rows [CHUNK][HD] in bf16 as the cache holds them
// (converted to fp32 in registers: the same values), then each warp's q heads [NWARPS][HB][HD] fp32.
static_assert(CHUNK == 64, "a lane scores two positions of a chunk");

template <int HD>
struct Smem {
  static constexpr int K_ROW = HD + KPAD;                                  // bf16 elements
  static constexpr int V_OFF = CHUNK * K_ROW * 2, Q_OFF = V_OFF + CHUNK * HD * 2;  // bytes
  static constexpr int BYTES = Q_OFF + NWARPS * HB * HD * 4;
};

// bf16 bits -> fp32 (exact): element 2i of a 32-bit word is its low half (little-endian).
__device__ __forceinline__ float lo_bf16(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float hi_bf16(unsigned w) { return __uint_as_float(w & 0xffff0000u); }

// 8 bf16 at p (16-byte aligned, one load) -> 8 fp32.
__device__ __forceinline__ void load_float8(float (&f)[8], const bf16 *p) {
  const uint4 r = *reinterpret_cast<const uint4 *>(p);
  const unsigned w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = lo_bf16(w[i]);
    f[2 * i + 1] = hi_bf16(w[i]);
  }
}

// sc[s][u] = q_u . k_s for the HB q heads of a warp (q: [HB][HD] fp32, scaled) and a lane's two
// key rows k0, k1 (bf16, staged in shared memory or in the cache: generic pointers): one FMA
// chain a (key, head) in dimension order, the same bits whichever memory a key sits in.
template <int HD>
__device__ __forceinline__ void scores(float (&sc)[2][HB], const float *q, const bf16 *k0, const bf16 *k1) {
#pragma unroll
  for (int u = 0; u < HB; ++u) sc[0][u] = sc[1][u] = 0.f;
#pragma unroll 4
  for (int d8 = 0; d8 < HD / 8; ++d8) {
    float a[8], b[8];
    load_float8(a, k0 + d8 * 8);
    load_float8(b, k1 + d8 * 8);
#pragma unroll
    for (int u = 0; u < HB; ++u) {
      const float4 qa = *reinterpret_cast<const float4 *>(q + u * HD + d8 * 8);
      const float4 qb = *reinterpret_cast<const float4 *>(q + u * HD + d8 * 8 + 4);
      const float qe[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        sc[0][u] = fmaf(qe[e], a[e], sc[0][u]);
        sc[1][u] = fmaf(qe[e], b[e], sc[1][u]);
      }
    }
  }
}

// acc[u][0..DL) += w[u] * v[lane * DL ..] for one value row v (bf16, shared or global).
template <int DL>
__device__ __forceinline__ void add_value(float (&acc)[HB][DL], float4 w, const bf16 *v, int lane) {
  float f[DL];
  if constexpr (DL == 4) {
    const uint2 r = *reinterpret_cast<const uint2 *>(v + lane * 4);
    f[0] = lo_bf16(r.x); f[1] = hi_bf16(r.x); f[2] = lo_bf16(r.y); f[3] = hi_bf16(r.y);
  } else {
    static_assert(DL == 2, "head_dim 64 or 128");
    const unsigned r = *reinterpret_cast<const unsigned *>(v + lane * 2);
    f[0] = lo_bf16(r); f[1] = hi_bf16(r);
  }
  const float wu[HB] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int u = 0; u < HB; ++u)
#pragma unroll
    for (int k = 0; k < DL; ++k) acc[u][k] = fmaf(wu[u], f[k], acc[u][k]);
}

// grid (T), block 256: k with RoPE at positions[t] and v into row rows[t] of the caches.
extern "C" __global__ void append_kv(const bf16 *__restrict__ qkv, const long long *__restrict__ positions,
                                     const long long *__restrict__ rows, const float *__restrict__ cos_t,
                                     const float *__restrict__ sin_t, bf16 *__restrict__ k_cache,
                                     bf16 *__restrict__ v_cache, int H, int KV, int hd, int R) {
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

// One block: chunk blockIdx.x (positions [c0, c0 + CHUNK)) of kv head blockIdx.y for the
// queries t in group blockIdx.z (queries [z * TQ, z * TQ + TQ)). A warp item is one query and HB
// of its kv head's G q heads (heads [hp * HB, hp * HB + HB), the last pass clamped), so every K
// and V element read serves HB heads; warp w takes items w, w + NWARPS, ... Partials go to
// part_ml [KV, nchunks, Q, 2] (the chunk's max score in log2 units, its sum of exp2(score - max))
// and part_acc [KV, nchunks, Q, HD] (Q = T * G query rows, row t * G + g); the last block of the
// (kv head, group) to finish combines them into out [T, H * HD] and resets its counter.
template <int HD>
__device__ void tree_attention_body(const bf16 *__restrict__ qkv, const long long *__restrict__ blk,
                                    const float *__restrict__ cos_t, const float *__restrict__ sin_t,
                                    const bf16 *__restrict__ k_cache, const bf16 *__restrict__ v_cache,
                                    float *__restrict__ part_ml, float *__restrict__ part_acc,
                                    int *__restrict__ counters, bf16 *__restrict__ out, int T, int H, int KV,
                                    int V, int span, int R, int TQ, float scale_log2) {
  constexpr int HALF = HD / 2, D8 = HD / 8, DL = HD / 32;  // DL: output dims a lane owns
  static_assert(HD == 64 || HD == 128, "head_dim 64 or 128");
  using S = Smem<HD>;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *k_tile = reinterpret_cast<bf16 *>(smem), *v_tile = reinterpret_cast<bf16 *>(smem + S::V_OFF);
  __shared__ int q_pos[TQMAX], q_prefix[TQMAX];  // position, prefix length of query t0 + i
  __shared__ __align__(16) float4 w_tile[NWARPS][CHUNK];  // a warp's weights: position -> its HB heads
  __shared__ int tree_tile[NWARPS][CHUNK];  // a warp's cache row of each tree position (0 elsewhere)
  __shared__ int is_last;

  const int c = blockIdx.x, kh = blockIdx.y, nchunks = gridDim.x, G = H / KV, Q = T * G;
  if (TQ > TQMAX) return;  // the Python side never launches it so (q_pos would overflow)
  const int t0 = blockIdx.z * TQ, t1 = min(T, t0 + TQ);  // this block's queries [t0, t1)
  const int c0 = c * CHUNK, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int cols = COL_VISIBLE + V, passes = (G + HB - 1) / HB;
  const long long stride = (long long)(H + 2 * KV) * HD;

  // Stage the chunk's cache rows below the span now, before the block's positions arrive: the
  // rows past a query's prefix are staged too and never read (those positions are tree rows).
  const int tile_rows = max(0, min(span - c0, CHUNK));
#pragma unroll 4
  for (int e = threadIdx.x; e < tile_rows * D8; e += blockDim.x) {
    const int r = e / D8, d = (e % D8) * 8;
    const long long g = ((long long)(c0 + r) * KV + kh) * HD + d;
    *reinterpret_cast<uint4 *>(k_tile + r * S::K_ROW + d) = *reinterpret_cast<const uint4 *>(k_cache + g);
    *reinterpret_cast<uint4 *>(v_tile + r * HD + d) = *reinterpret_cast<const uint4 *>(v_cache + g);
  }
  for (int i = threadIdx.x; i < t1 - t0; i += blockDim.x) {
    q_pos[i] = (int)blk[(long long)(t0 + i) * cols + COL_POSITION];
    q_prefix[i] = (int)blk[(long long)(t0 + i) * cols + COL_PREFIX];
  }
  __syncthreads();

  float *qw = reinterpret_cast<float *>(smem + S::Q_OFF) + warp * HB * HD;  // [HB][HD]
  float4 *wt = w_tile[warp];
  int *tt = tree_tile[warp];
  for (int item = warp; item < (t1 - t0) * passes; item += NWARPS) {
    const int t = t0 + item / passes, hp = item % passes;
    const int p = q_pos[t - t0], n = q_prefix[t - t0];
    if (p < c0) continue;  // the chunk is past this query: it contributes nothing, never read

    // The HB heads' q with RoPE at p in fp32, scaled by hd^-0.5 * log2(e) (softmax in base 2);
    // heads past G (the last pass) repeat head G - 1 and are not written back.
    const float *cs = cos_t + (long long)p * HD, *sn = sin_t + (long long)p * HD;
#pragma unroll
    for (int u = 0; u < HB; ++u) {
      const bf16 *q = qkv + t * stride + (long long)(kh * G + min(hp * HB + u, G - 1)) * HD;
#pragma unroll
      for (int k = 0; k < HD / 64; ++k) {
        const int i = lane + 32 * k;
        float y1, y2;
        rope_pair(__bfloat162float(q[i]), __bfloat162float(q[i + HALF]), cs[i], sn[i], cs[i + HALF],
                  sn[i + HALF], y1, y2);
        qw[u * HD + i] = y1 * scale_log2;
        qw[u * HD + i + HALF] = y2 * scale_log2;
      }
    }
    // The lane's positions j = c0 + 32 s + lane: staged rows below the prefix, cache rows of the
    // query's visible list from the prefix on (its ancestors, then itself).
    const long long *vis = blk + (long long)t * cols + COL_VISIBLE;
    const int end = min(p + 1, c0 + CHUNK);  // positions [c0, end) of this chunk; c0 <= p
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int j = c0 + 32 * s + lane;
      tt[32 * s + lane] = j >= n && j < end ? (int)key_row(vis, V, n, j, R) : 0;
    }
    __syncwarp();

    float sc[2][HB];
    if (end <= n) {  // every position staged: the common case, shared-memory loads only
      scores<HD>(sc, qw, k_tile + lane * S::K_ROW, k_tile + (32 + lane) * S::K_ROW);
    } else {  // tree rows read from the cache in place
      const bf16 *k[2];
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        const int j = c0 + 32 * s + lane;
        k[s] = j < n || j >= end ? k_tile + (32 * s + lane) * S::K_ROW
                                 : k_cache + ((long long)tt[32 * s + lane] * KV + kh) * HD;
      }
      scores<HD>(sc, qw, k[0], k[1]);
    }

    // One softmax over the chunk a head: one max, one sum (lane order fixed: positions s = 0, 1,
    // then the butterfly); the weights go to the warp's tile, a position's HB heads together.
    float wgt[2][HB];
#pragma unroll
    for (int u = 0; u < HB; ++u) {
#pragma unroll
      for (int s = 0; s < 2; ++s)
        if (c0 + 32 * s + lane >= end) sc[s][u] = NEG_INF;
      const float m = warp_max(fmaxf(sc[0][u], sc[1][u]));  // finite: position c0 <= p is valid
      wgt[0][u] = exp2f(sc[0][u] - m);  // exp2(-inf) = 0 past the end
      wgt[1][u] = exp2f(sc[1][u] - m);
      const float l = warp_sum(wgt[0][u] + wgt[1][u]);
      sc[0][u] = m;  // kept for the partials
      sc[1][u] = l;
    }
#pragma unroll
    for (int s = 0; s < 2; ++s) wt[32 * s + lane] = make_float4(wgt[s][0], wgt[s][1], wgt[s][2], wgt[s][3]);
    __syncwarp();

    // Values in position order: one read of each value row serves the HB heads.
    float acc[HB][DL];
#pragma unroll
    for (int u = 0; u < HB; ++u)
#pragma unroll
      for (int k = 0; k < DL; ++k) acc[u][k] = 0.f;
    if (end <= n) {
#pragma unroll 8
      for (int j = 0; j < end - c0; ++j) add_value<DL>(acc, wt[j], v_tile + j * HD, lane);
    } else {  // the same sum, tree rows from the cache (the loads of 8 positions in flight at once)
#pragma unroll 8
      for (int j = 0; j < end - c0; ++j) {
        const bf16 *v = c0 + j < n ? v_tile + j * HD : v_cache + ((long long)tt[j] * KV + kh) * HD;
        add_value<DL>(acc, wt[j], v, lane);
      }
    }
#pragma unroll
    for (int u = 0; u < HB; ++u) {
      const int g = hp * HB + u;
      if (g >= G) break;
      const long long slot = ((long long)kh * nchunks + c) * Q + (long long)t * G + g;
      if (lane == 0) {
        part_ml[slot * 2] = sc[0][u];
        part_ml[slot * 2 + 1] = sc[1][u];
      }
      if constexpr (DL == 4)
        *reinterpret_cast<float4 *>(part_acc + slot * HD + lane * 4) =
            make_float4(acc[u][0], acc[u][1], acc[u][2], acc[u][3]);
      else
        *reinterpret_cast<float2 *>(part_acc + slot * HD + lane * 2) = make_float2(acc[u][0], acc[u][1]);
    }
    __syncwarp();  // qw, wt and tt are rewritten by the next item
  }

  // The last block of this (kv head, group) to finish combines every chunk's partials.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    int *counter = counters + kh * gridDim.z + blockIdx.z;
    const int done = atomicAdd(counter, 1);
    is_last = done == nchunks - 1;
    if (is_last) *counter = 0;  // every block has counted: ready for the next call / replay
  }
  __syncthreads();
  if (!is_last) return;
  __threadfence();

  // One item: a query row and DL consecutive dims of it (partials read past L1: __ldcg).
  for (int item = threadIdx.x; item < (t1 - t0) * G * 32; item += blockDim.x) {
    const int qr = t0 * G + item / 32, d = (item % 32) * DL, t = qr / G, h = kh * G + qr % G;
    const int p = q_pos[t - t0];
    const int last = min(max(p, 0) / CHUNK, nchunks - 1);
    const long long first = (long long)kh * nchunks * Q + qr;  // slot of chunk 0
    float m = NEG_INF;
#pragma unroll 4
    for (int cc = 0; cc <= last; ++cc) m = fmaxf(m, __ldcg(part_ml + (first + (long long)cc * Q) * 2));
    float l = 0.f, o[DL];
#pragma unroll
    for (int k = 0; k < DL; ++k) o[k] = 0.f;
#pragma unroll 4
    for (int cc = 0; cc <= last; ++cc) {  // chunks in order
      const long long slot = first + (long long)cc * Q;
      const float w = exp2f(__ldcg(part_ml + slot * 2) - m);
      l = fmaf(w, __ldcg(part_ml + slot * 2 + 1), l);
      float a[DL];
      if constexpr (DL == 4) {  // one 16-byte load (slot * HD + d is a multiple of 4 floats)
        const float4 v = __ldcg(reinterpret_cast<const float4 *>(part_acc + slot * HD + d));
        a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
      } else {
        const float2 v = __ldcg(reinterpret_cast<const float2 *>(part_acc + slot * HD + d));
        a[0] = v.x; a[1] = v.y;
      }
#pragma unroll
      for (int k = 0; k < DL; ++k) o[k] = fmaf(w, a[k], o[k]);
    }
    bf16 *dst = out + (long long)t * H * HD + (long long)h * HD + d;
#pragma unroll
    for (int k = 0; k < DL; ++k) dst[k] = __float2bfloat16_rn(o[k] / l);
  }
}

// At least MIN_BLOCKS blocks an SM (at most 128 registers at 2).
#define TREE_ATTENTION(HD)                                                                                 \
  extern "C" __global__ void __launch_bounds__(NWARPS * 32, MIN_BLOCKS) tree_attention_hd##HD(                          \
      const bf16 *qkv, const long long *blk, const float *cos_t, const float *sin_t, const bf16 *k_cache,   \
      const bf16 *v_cache, float *part_ml, float *part_acc, int *counters, bf16 *out, int T, int H, int KV, \
      int V, int span, int R, int TQ, float scale_log2) {                                                          \
    tree_attention_body<HD>(qkv, blk, cos_t, sin_t, k_cache, v_cache, part_ml, part_acc, counters, out, T, \
                            H, KV, V, span, R, TQ, scale_log2);                                                \
  }
TREE_ATTENTION(64)
TREE_ATTENTION(128)
